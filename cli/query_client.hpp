// A client of memwatchd's query socket: one JSON request, one JSON reply, with a deadline so
// that a missing daemon is an error message rather than a hang.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace memwatch::cli {

// The endpoint from --query, else MEMWATCH_QUERY, else the default ipc path.
std::string query_endpoint(const std::string& from_option);

// Sends `request` and returns the reply; throws std::runtime_error naming the endpoint when no
// daemon answers within `deadline`, or when the reply says ok:false (with its error).
nlohmann::json ask_daemon(const std::string& endpoint, const nlohmann::json& request,
                          std::chrono::milliseconds deadline = std::chrono::seconds(5));

}  // namespace memwatch::cli
