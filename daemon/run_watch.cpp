#include "run_watch.hpp"

#include "warnings.hpp"

namespace memwatch::daemon {

std::vector<nlohmann::json> RunWatch::observe(const protocol::Sample& s,
                                              const protocol::WatchSettings& settings,
                                              std::int64_t run, const std::string& workload) {
  std::vector<nlohmann::json> events;
  const auto host = host_.observe(s.t_s, s.host_live_bytes, host_capacity_, settings);
  if (host.kind != protocol::WatchKind::none)
    events.push_back(capacity_event(host, "host", settings.share, run, workload));
  const auto device = device_.observe(s.t_s, s.device_live_bytes, device_capacity_, settings);
  if (device.kind != protocol::WatchKind::none)
    events.push_back(capacity_event(device, "device", settings.share, run, workload));
  return events;
}

}  // namespace memwatch::daemon
