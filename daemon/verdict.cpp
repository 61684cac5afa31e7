#include "verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "memwatch/model/largest_fitting.hpp"
#include "refit.hpp"

namespace memwatch::daemon {

std::string formula_of(const model::Model& m, const model::Point& p) {
  return m.target + " = " + m.part_for(p).function.to_string(m.params);
}

model::Point point_of(const protocol::Params& params) {
  model::Point p;
  for (const auto& [name, value] : params) p.values[name] = value;
  return p;
}

// The modeler's own search (memwatch max answers the same): on whole values of the parameter,
// by the upper bound, never above a smaller value that failed.
double largest_value_that_fits(const model::Model& m, model::Point p, const std::string& vary,
                               double capacity) {
  if (!(capacity > 0)) return 0;
  try {
    return model::largest_fitting(m, std::move(p), vary, capacity).value;
  } catch (const std::invalid_argument&) {
    return 0;  // the run's parameters do not fit this model: no value to name
  }
}

protocol::Verdict judge(const model::Model& m, const protocol::Hello& hello,
                        double capacity_bytes) {
  protocol::Verdict v;
  v.target = m.target;
  const model::Point p = point_of(hello.params);
  const model::Prediction pred = m.predict(p);
  v.predicted_bytes = pred.value;
  v.upper_bytes = pred.upper;
  v.capacity_bytes = capacity_bytes;
  v.formula = formula_of(m, p);
  v.kind = capacity_bytes > 0 && pred.upper > capacity_bytes ? protocol::VerdictKind::over_capacity
                                                             : protocol::VerdictKind::fits;
  if (v.kind == protocol::VerdictKind::over_capacity && !hello.params.empty()) {
    v.vary = hello.params.front().first;
    v.largest_fitting = largest_value_that_fits(m, p, v.vary, v.capacity_bytes);
  }
  return v;
}

std::int64_t device_capacity_of(const protocol::Hello& hello) {
  constexpr std::int64_t kMost = std::numeric_limits<std::int64_t>::max();
  std::int64_t sum = 0;
  for (std::int64_t c : hello.device_capacity_bytes)
    if (c > 0) sum = c > kMost - sum ? kMost : sum + c;  // a client's numbers: never overflow
  return sum;
}

protocol::Verdict judge_run(const ModelCache& models, const protocol::Hello& hello) {
  // A run whose parameters are not a model's gets no verdict from it.
  auto judged = [&](const char* target, double capacity) -> std::optional<protocol::Verdict> {
    const auto m = models.find(hello.workload, target);
    if (m == nullptr) return std::nullopt;
    try {
      return judge(*m, hello, capacity);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  auto device = judged(kDeviceTarget, static_cast<double>(device_capacity_of(hello)));
  const auto host = judged(kHostTarget, static_cast<double>(hello.host_capacity_bytes));
  auto over = [](const auto& v) { return v && v->kind == protocol::VerdictKind::over_capacity; };
  if (over(device)) {
    // What fits must fit both memories.
    if (over(host) && host->vary == device->vary)
      device->largest_fitting = std::min(device->largest_fitting, host->largest_fitting);
    return *device;
  }
  if (host) return *host;
  return device.value_or(protocol::Verdict{});
}

}  // namespace memwatch::daemon
