// A running shim's live memory against the capacities its HELLO named, sample by sample, on the
// same rule as the shim's own (protocol/trend.hpp). A SAMPLE carries the devices' sum only, so
// device memory is judged as that sum against the sum of the device capacities named.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "memwatch/protocol/trend.hpp"
#include "memwatch/protocol/wire.hpp"
#include "verdict.hpp"

namespace memwatch::daemon {

class RunWatch {
 public:
  RunWatch() = default;
  explicit RunWatch(const protocol::Hello& hello)
      : host_capacity_(hello.host_capacity_bytes), device_capacity_(device_capacity_of(hello)) {}

  // The warning events this sample raises: usually none, each kind at most once per memory.
  std::vector<nlohmann::json> observe(const protocol::Sample& s,
                                      const protocol::WatchSettings& settings, std::int64_t run,
                                      const std::string& workload);

 private:
  std::int64_t host_capacity_ = 0;
  std::int64_t device_capacity_ = 0;
  protocol::CapacityWatch host_;
  protocol::CapacityWatch device_;
};

}  // namespace memwatch::daemon
