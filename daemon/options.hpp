// memwatchd's command line, with every default documented in `memwatchd --help`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "memwatch/protocol/trend.hpp"

namespace memwatch::daemon {

struct Options {
  std::string ingest;  // ROUTER for the shims
  std::string query;   // REP for the CLI and any client
  std::string events;  // PUB of warnings and new models
  std::string store;   // a SQLite file's path or a PostgreSQL URL
  std::string queue;   // a PostgreSQL store's local queue while the server is away
  std::int64_t queue_limit = 1'000'000;  // samples the queue holds before it drops new ones
  std::string curve_keys;  // a `memwatch keygen` folder: CurveZMQ on every socket; empty: off
  std::string metrics;     // PORT or HOST:PORT of the Prometheus endpoint; empty: none
  bool insecure_network = false;  // a tcp endpoint beyond loopback without CURVE is allowed
  bool foreground = false;
  protocol::WatchSettings watch;  // the running shims' capacity warnings
  // --axes: the tensor axes a parameter spans, in every workload that has it (model/priors.hpp)
  std::map<std::string, int> axes;
};

// Parses argv; on a bad or missing value, or a tcp endpoint open to the network without CURVE
// (and without --insecure-network), returns nullopt after writing `error`.
std::optional<Options> parse_options(std::span<char* const> args, std::string& error);
std::string options_help();

// tcp://:PORT or tcp://PORT binds to loopback only; other endpoints are kept as given.
std::string loopback_if_no_host(const std::string& endpoint);
// Readies the folders of the ipc endpoints and of the store (docs/security.md): missing ones
// are made 0700, existing ones are judged and never changed; false, with `error`, if one fails.
bool prepare_paths(const Options& options, std::string& error);

}  // namespace memwatch::daemon
