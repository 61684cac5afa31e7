#include "verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "refit.hpp"

namespace memwatch::daemon {

namespace {

constexpr double kSearchLimit = 1e7;  // no parameter of a training run goes past this

bool fits(const model::Model& m, model::Point& p, const std::string& vary, double v,
          double capacity) {
  p.values[vary] = v;
  return m.predict(p).upper <= capacity;
}

}  // namespace

std::string formula_of(const model::Model& m, const model::Point& p) {
  return m.target + " = " + m.part_for(p).function.to_string(m.params);
}

model::Point point_of(const protocol::Params& params) {
  model::Point p;
  for (const auto& [name, value] : params) p.values[name] = value;
  return p;
}

double largest_fitting(const model::Model& m, model::Point p, const std::string& vary,
                       double capacity) {
  if (!fits(m, p, vary, 1, capacity)) return 0;
  const auto start = p.values.count(vary) ? std::max(1.0, std::floor(p.values[vary])) : 1.0;
  double good = 1, bad = 0;
  // Grow from the run's own value (or 1) until it no longer fits, then bisect between.
  for (double v = start; v <= kSearchLimit; v *= 2) {
    if (!fits(m, p, vary, v, capacity)) {
      bad = v;
      break;
    }
    good = v;
  }
  if (bad == 0) return good;
  if (good >= bad) good = 1;
  while (bad - good > 1) {
    const double mid = std::floor((good + bad) / 2);
    (fits(m, p, vary, mid, capacity) ? good : bad) = mid;
  }
  return good;
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
    v.largest_fitting = largest_fitting(m, p, v.vary, v.capacity_bytes);
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
