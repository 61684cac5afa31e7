#include "refit.hpp"

#include <algorithm>

namespace memwatch::daemon {

namespace {

double target_of(const Run& r, const std::string& target) {
  return static_cast<double>(target == kDeviceTarget ? r.device_peak_bytes : r.host_peak_bytes);
}

const double* param(const Run& r, const std::string& name) {
  for (const auto& [n, v] : r.params)
    if (n == name) return &v;
  return nullptr;
}

}  // namespace

model::Dataset dataset_of(const std::vector<Run>& runs, const std::string& target) {
  model::Dataset d;
  d.target = target;
  const auto first = std::find_if(runs.begin(), runs.end(),
                                  [](const Run& r) { return r.status == RunStatus::finished; });
  if (first == runs.end()) return d;
  for (const auto& [name, value] : first->params) d.params.push_back(name);
  for (const Run& r : runs) {
    if (r.status != RunStatus::finished || target_of(r, target) <= 0) continue;
    std::vector<double> x;
    for (const std::string& name : d.params) {
      const double* v = param(r, name);
      if (v == nullptr) break;
      x.push_back(*v);
    }
    if (x.size() != d.params.size()) continue;
    d.add(std::move(x), target_of(r, target));
    d.rows.back().line = static_cast<std::size_t>(r.id);
  }
  return d;
}

std::optional<model::Model> fit_runs(const std::vector<Run>& runs, const std::string& target,
                                     std::string& why, const std::map<std::string, int>& axes) {
  const model::Dataset d = dataset_of(runs, target);
  if (d.rows.empty()) {
    why = "no finished run with a non-zero " + target;
    return std::nullopt;
  }
  model::FitOptions options;
  for (const auto& [name, count] : axes)
    if (std::find(d.params.begin(), d.params.end(), name) != d.params.end())
      options.priors.axes[name] = count;
  try {
    return model::fit(d, options);
  } catch (const model::FitError& e) {
    why = e.what();
  } catch (const std::exception& e) {
    why = std::string("the fit failed: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace memwatch::daemon
