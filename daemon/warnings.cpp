#include "warnings.hpp"

#include "refit.hpp"

namespace memwatch::daemon {

using nlohmann::json;

std::string memory_of_target(const std::string& target) {
  return target == kDeviceTarget ? "device" : "host";
}

json predicted_oom_event(const protocol::Verdict& v, std::int64_t run,
                         const std::string& workload) {
  return {{"event", "warning"},
          {"kind", "predicted_oom"},
          {"run", run},
          {"workload", workload},
          {"memory", memory_of_target(v.target)},
          {"target", v.target},
          {"predicted_bytes", v.predicted_bytes},
          {"upper_bytes", v.upper_bytes},
          {"capacity_bytes", v.capacity_bytes},
          {"vary", v.vary},
          {"largest_fitting", v.largest_fitting}};
}

json capacity_event(const protocol::WatchFinding& f, const std::string& memory, double share,
                    std::int64_t run, const std::string& workload) {
  const bool on_course = f.kind == protocol::WatchKind::on_course;
  json e = {{"event", "warning"},
            {"kind", on_course ? "on_course" : "near_capacity"},
            {"run", run},
            {"workload", workload},
            {"memory", memory},
            {"live_bytes", static_cast<std::int64_t>(f.live_bytes)},
            {"capacity_bytes", static_cast<std::int64_t>(f.capacity_bytes)},
            {"share", share}};
  if (on_course) {
    e["rate_bytes_per_s"] = f.rate_bytes_per_s;
    e["eta_s"] = f.eta_s;
  }
  return e;
}

}  // namespace memwatch::daemon
