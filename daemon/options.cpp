#include "options.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "memwatch/protocol/endpoints.hpp"

namespace memwatch::daemon {

namespace fs = std::filesystem;

namespace {

std::string default_db() {
  const char* state = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = state && *state ? fs::path(state)
                        : home && *home ? fs::path(home) / ".local" / "state"
                                        : fs::path("/tmp");
  return (base / "memwatch" / "memwatch.db").string();
}

bool make_private_dir(const fs::path& dir, std::string& error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir.string() + ": " + ec.message();
    return false;
  }
  if (chmod(dir.c_str(), 0700) != 0) {
    error = "cannot make " + dir.string() + " private (mode 0700)";
    return false;
  }
  return true;
}

}  // namespace

std::string loopback_if_no_host(const std::string& endpoint) {
  constexpr std::string_view tcp = "tcp://";
  if (!endpoint.starts_with(tcp)) return endpoint;
  std::string rest = endpoint.substr(tcp.size());
  if (rest.starts_with(":")) rest.erase(0, 1);
  if (rest.find(':') == std::string::npos) return "tcp://127.0.0.1:" + rest;
  return endpoint;
}

std::optional<Options> parse_options(std::span<char* const> args, std::string& error) {
  Options o;
  o.ingest = protocol::default_ingest_endpoint();
  o.query = protocol::default_query_endpoint();
  o.events = protocol::default_events_endpoint();
  o.db = default_db();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    auto value = [&](std::string& slot) {
      if (i + 1 >= args.size()) {
        error = std::string(a) + " needs a value";
        return false;
      }
      slot = args[++i];
      return true;
    };
    // A number of the watch's settings, by its parser (-1: not one).
    auto number = [&](double& slot, double (*parse)(std::string_view), const char* expected) {
      std::string text;
      if (!value(text)) return false;
      const double v = parse(text);
      if (v < 0) {
        error = std::string(a) + ": expected " + expected + ", got '" + text + "'";
        return false;
      }
      slot = v;
      return true;
    };
    bool ok = true;
    if (a == "--ingest") ok = value(o.ingest);
    else if (a == "--query") ok = value(o.query);
    else if (a == "--events") ok = value(o.events);
    else if (a == "--db") ok = value(o.db);
    else if (a == "--curve-keys") ok = value(o.curve_keys);
    else if (a == "--foreground") o.foreground = true;
    else if (a == "--warn-share")
      ok = number(o.watch.share, protocol::parse_watch_share, "a share like 0.9 or 90%");
    else if (a == "--warn-horizon")
      ok = number(o.watch.horizon_s, protocol::parse_watch_seconds, "seconds like 30 (0: never)");
    else {
      error = "unknown option '" + std::string(a) + "' (see memwatchd --help)";
      return std::nullopt;
    }
    if (!ok) return std::nullopt;
  }
  for (std::string* e : {&o.ingest, &o.query, &o.events}) {
    if (!protocol::is_endpoint(*e)) {
      error = "'" + *e + "' is not an endpoint: expected ipc://PATH or tcp://[HOST]:PORT";
      return std::nullopt;
    }
    *e = loopback_if_no_host(*e);
  }
  return o;
}

bool prepare_paths(const Options& o, std::string& error) {
  for (const std::string& e : {o.ingest, o.query, o.events}) {
    if (!e.starts_with("ipc://")) continue;
    if (!make_private_dir(fs::path(e.substr(6)).parent_path(), error)) return false;
  }
  const fs::path db_dir = fs::path(o.db).parent_path();
  if (!db_dir.empty() && !make_private_dir(db_dir, error)) return false;
  return true;
}

std::string options_help() {
  return "usage: memwatchd [--ingest EP] [--query EP] [--events EP] [--db PATH] "
         "[--curve-keys DIR] [--foreground]\n"
         "                [--warn-share SHARE] [--warn-horizon SECONDS]\n"
         "  --ingest EP   where shims report (ZeroMQ ROUTER); default " +
         protocol::default_ingest_endpoint() +
         "\n"
         "  --query EP    JSON requests (ZeroMQ REP); default " +
         protocol::default_query_endpoint() +
         "\n"
         "  --events EP   warnings and new models (ZeroMQ PUB); default " +
         protocol::default_events_endpoint() +
         "\n"
         "  --db PATH     the SQLite store; default " + default_db() +
         "\n"
         "  --curve-keys DIR  CurveZMQ on all three sockets, with DIR/server.key as the\n"
         "                daemon's secret key; only clients whose public key is DIR/client.pub\n"
         "                or DIR/clients/*.pub are let in (make DIR: `memwatch keygen DIR`)\n"
         "  --foreground  stay in the foreground (default: detach)\n"
         "  --warn-share SHARE      warn when a run's live memory passes this share of its\n"
         "                          capacity (0.9 or 90%); default 90%\n"
         "  --warn-horizon SECONDS  ... or its growth is on course to within this many seconds\n"
         "                          (0: never); default 30\n"
         "ipc folders are created with mode 0700; tcp://:PORT binds to 127.0.0.1 only. Without\n"
         "--curve-keys, tcp endpoints are neither encrypted nor authenticated: to take runs\n"
         "from other nodes, bind tcp://0.0.0.0:PORT with --curve-keys.\n";
}

}  // namespace memwatch::daemon
