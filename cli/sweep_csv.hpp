// The sweep's CSV: one row a run, the grid's parameters then the measure columns the modeler
// knows (protocol::sweep_measure_columns); reading an earlier file back to resume it.
#pragma once

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sweep_grid.hpp"
#include "sweep_run.hpp"

namespace memwatch::cli {

std::string csv_header(const std::vector<Axis>& axes);
std::string csv_row(const std::vector<Axis>& axes, const Point& point, const RunResult& r);
// How many rows each point (by point_key) already has in `out`. A last line without its newline
// is a row cut short by a crash: it is cut off, so the run is done again.
std::map<std::string, std::size_t> read_done(const std::filesystem::path& out,
                                             const std::vector<Axis>& axes);

// `out` opened to append rows, its header written when it is new or empty. `resume` says an
// existing file may be continued; without it an existing file is a usage error.
std::FILE* open_rows(const std::filesystem::path& out, const std::vector<Axis>& axes, bool resume);

// A row already in the file, for a sweep that picks its next point from what it has measured.
struct WrittenRun {
  std::vector<double> values;    // one per axis
  std::optional<double> figure;  // the asked-for measure column; none when the cell is empty
  double elapsed_s = 0;
  int exit_status = 0;
};

// The rows of `out` (run read_done first: it cuts a row left half written), with the column
// `figure` (one of the sweep's measure columns) of each.
std::vector<WrittenRun> read_runs(const std::filesystem::path& out, const std::vector<Axis>& axes,
                                  const std::string& figure);

}  // namespace memwatch::cli
