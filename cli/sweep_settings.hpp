// What a sweep is asked to do, whoever picks its points (the whole grid, or `--auto`): the
// command, the grid, the output file; and a run of one point made from them.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "args.hpp"
#include "sweep_grid.hpp"
#include "sweep_run.hpp"

namespace memwatch::cli {

// The options of `memwatch sweep`: those of every sweep, then --auto and those it alone takes.
inline constexpr Option kSweepOptions[] = {
    {"grid", "NAME=V1,V2,...", "a parameter and its values; one --grid per parameter"},
    {"out", "FILE", "the CSV the rows are appended to"},
    {"repeat", "N", "run every point N times (default 1)"},
    {"resume", "", "skip the points FILE has rows for already, and finish a sweep cut short"},
    {"timeout", "SECONDS", "kill a run that takes longer; its row says so"},
    {"shim", "PATH",
     "the libmemwatch.so to preload (default: MEMWATCH_SHIM, else the one built beside this "
     "memwatch)"},
    {"workload", "NAME", "the runs' workload name (default: the program's name)"},
    {"config-template", "FILE",
     "each run gets a copy of FILE with its {NAME} filled in, and {config} in the command is "
     "that copy's path; other braces in FILE stay as they are"},
    {"auto", "",
     "pick each run from the grid, cheapest and most informative for the target first, never "
     "one whose bound is above 1/8 of the target's predicted memory (or, where that is less, "
     "the largest run made); refit after each and stop "
     "when the upper bound at the target is within the tolerance of the prediction, or the "
     "budget is spent; one line says the prediction and bound at the target, the runs, and "
     "what stopped it"},
    {"toward", "NAME=V,...",
     "with --auto: the target (a parameter not named is at its grid's largest value)"},
    {"budget-runs", "N", "with --auto: at most N runs, the file's rows counted (default 10)"},
    {"budget-minutes", "M",
     "with --auto: start no run that would end past M minutes of runs (its time estimated from "
     "the runs before it)"},
    {"tolerance", "SHARE", "with --auto: the bound's width that ends the sweep (default 2%)"},
    {"measure", "COLUMN",
     "with --auto: the column to model (default: device_peak_bytes where the first run that "
     "ends well used a device, else host_peak_bytes)"},
    {"model-out", "MODEL.json", "with --auto: write the last model there"},
    {"axes", "NAME=K,...",
     "with --auto: NAME spans K axes of the trainer's tensors (a cube's edge 3), so the model "
     "carries NAME^K, as `memwatch fit --axes` does"},
};
inline constexpr std::size_t kAutoAt = 8;
static_assert(kSweepOptions[kAutoAt].name == "auto");
inline constexpr auto kAutoOnlyOptions = std::span(kSweepOptions).subspan(kAutoAt + 1);

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
