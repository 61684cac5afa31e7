// The sweep's CSV: one row a run, the grid's parameters then the measure columns the modeler
// knows (protocol::sweep_measure_columns); reading an earlier file back to resume it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
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

}  // namespace memwatch::cli
