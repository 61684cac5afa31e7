// A client of memwatchd's query socket: one JSON request, one JSON reply, with a deadline so
// that a missing daemon is an error message rather than a hang.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "args.hpp"

namespace memwatch::cli {

// Where the daemon answers, and how to reach it.
struct DaemonQuery {
  std::string endpoint;
  std::string curve_keys;  // a `memwatch keygen` folder: ask as a CURVE client; empty: plain
};

// The options of every command that asks the daemon, read by daemon_query.
inline constexpr Option kQueryOption{
    "query", "EP",
    "the daemon's query endpoint, ipc://PATH or tcp://HOST:PORT (default: MEMWATCH_QUERY, else "
    "the daemon's default socket)"};
inline constexpr Option kCurveKeysOption{
    "curve-keys", "DIR",
    "ask as a CurveZMQ client with the keys `memwatch keygen DIR` made (default: "
    "MEMWATCH_CURVE_KEYS, else plain)"};

inline constexpr Option kWorkloadOption{"workload", "W",
                                        "the workload, as `memwatch workloads` lists it"};

// The endpoint from --query, else MEMWATCH_QUERY, else the default ipc path; the keys from
// --curve-keys, else MEMWATCH_CURVE_KEYS. `args` must accept both options.
DaemonQuery daemon_query(const Args& args);

// No daemon answered within the deadline (or none listens where one was looked for).
struct DaemonUnreachable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Sends `request` and returns the reply; throws DaemonUnreachable naming the endpoint when no
// daemon answers within `deadline`, std::runtime_error when the reply says ok:false (with its
// error), and UsageError when the key folder cannot be read.
nlohmann::json ask_daemon(const DaemonQuery& daemon, const nlohmann::json& request,
                          std::chrono::milliseconds deadline = std::chrono::seconds(5));

// Whether the host of a tcp:// endpoint refuses a connection outright (it is up, no daemon
// listens): known within `wait`, where a ZeroMQ request would retry until its deadline. False
// for other transports, and when no refusal came in time.
bool daemon_refuses_connection(const std::string& endpoint, std::chrono::milliseconds wait);

// A run's parameters as the daemon answers them (`runs`), for people: batch=8,dim=64.
std::string params_text(const nlohmann::json& params);

}  // namespace memwatch::cli
