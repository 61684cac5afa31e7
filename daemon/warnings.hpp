// The warning events memwatchd publishes on its events socket, one builder per kind, so that
// every warning names its run, its workload and the memory it is about.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "memwatch/protocol/trend.hpp"
#include "memwatch/protocol/wire.hpp"

namespace memwatch::daemon {

// "host" or "device": the memory a model target or a watch is about.
std::string memory_of_target(const std::string& target);

// predicted_oom: the verdict at HELLO is over capacity.
nlohmann::json predicted_oom_event(const protocol::Verdict& v, std::int64_t run,
                                   const std::string& workload);

// near_capacity or on_course: a finding of the capacity watch on a running shim's samples.
nlohmann::json capacity_event(const protocol::WatchFinding& f, const std::string& memory,
                              double share, std::int64_t run, const std::string& workload);

}  // namespace memwatch::daemon
