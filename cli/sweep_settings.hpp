// What a sweep is asked to do, whoever picks its points (the whole grid, or `--auto`): the
// command, the grid, the output file; and a run of one point made from them.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "sweep_grid.hpp"
#include "sweep_run.hpp"

namespace memwatch::cli {

struct SweepSettings {
  std::vector<Axis> axes;
  std::filesystem::path out;
  bool resume = false;
  std::size_t repeat = 1;
  std::optional<double> timeout_s;
  std::optional<std::string> workload;
  std::optional<std::string> config_template;  // its text; a run's copy replaces {config}
  std::string config_extension;                // the template's, for tools that look at it
  std::vector<std::string> command;
};

SweepSettings read_sweep_settings(const Args& args);

// The run of one point: its command words filled in, and its config file written when there is
// a template. `i` names its files in `dir`.
RunSpec run_spec(const SweepSettings& s, const Point& p, std::size_t i,
                 const std::filesystem::path& dir, const std::filesystem::path& shim);

// A fresh folder under $TMPDIR for the runs' reports, logs and config files.
std::filesystem::path make_run_folder();

// "1:02:03", and "1.25 GiB" ("-" for no figure): the sweep's progress lines.
std::string clock_text(double seconds);
std::string gib_text(std::optional<double> bytes);

}  // namespace memwatch::cli
