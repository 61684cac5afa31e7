// memwatchd's command line, with every default documented in `memwatchd --help`.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "memwatch/protocol/trend.hpp"

namespace memwatch::daemon {

struct Options {
  std::string ingest;      // ROUTER for the shims
  std::string query;       // REP for the CLI and any client
  std::string events;      // PUB of warnings and new models
  std::string db;          // the SQLite file
  std::string curve_keys;  // a `memwatch keygen` folder: CurveZMQ on every socket; empty: off
  bool foreground = false;
  protocol::WatchSettings watch;  // the running shims' capacity warnings
};

// Parses argv; on a bad or missing value returns nullopt after writing `error`.
std::optional<Options> parse_options(std::span<char* const> args, std::string& error);
std::string options_help();

// tcp://:PORT or tcp://PORT binds to loopback only; other endpoints are kept as given.
std::string loopback_if_no_host(const std::string& endpoint);
// Creates the folder of an ipc endpoint (mode 0700) and of the database; error on failure.
bool prepare_paths(const Options& options, std::string& error);

}  // namespace memwatch::daemon
