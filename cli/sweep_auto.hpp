// `memwatch sweep --auto`: the sweep picks its own runs toward a target configuration, refits
// the modeler after each, and stops when the upper bound at the target is within a tolerance of
// the prediction or the budget is spent. Rows go to the same CSV as a whole-grid sweep's.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "sweep_settings.hpp"

namespace memwatch::cli {

struct AutoSettings {
  std::vector<double> target;  // one value per axis: --toward, else the axis's largest
  std::size_t budget_runs = 10;
  std::optional<double> budget_minutes;
  double tolerance = 0.02;
  std::string measure;  // --measure; empty: picked by the first run that ends well
  std::optional<std::filesystem::path> model_out;
  std::map<std::string, int> stated_axes;  // --axes: the tensor axes a parameter spans
};

AutoSettings read_auto_settings(const Args& args, const SweepSettings& s);

// The first option given that only --auto takes, to refuse it on a whole-grid sweep.
std::optional<std::string> auto_only_option(const Args& args);

int sweep_auto(const SweepSettings& s, const AutoSettings& a, const std::filesystem::path& shim);

}  // namespace memwatch::cli
