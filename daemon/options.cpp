#include "options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "memwatch/model/priors.hpp"
#include "memwatch/protocol/endpoints.hpp"
#include "memwatch/protocol/private_dir.hpp"
#include "metrics_server.hpp"
#include "store.hpp"

namespace memwatch::daemon {

namespace fs = std::filesystem;

namespace {

fs::path state_dir() {
  const char* state = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = state && *state ? fs::path(state)
                        : home && *home ? fs::path(home) / ".local" / "state"
                                        : fs::path("/tmp");
  return base / "memwatch";
}

std::string default_store() {
  return (state_dir() / "memwatch.db").string();
}

std::string default_queue() {
  return (state_dir() / "queue.db").string();
}

// Makes the missing folders of `dir` as `mkdir -p` would, the last one private (0700): only the
// last holds memwatchd's files, and its parents are left as open as any other new folder.
std::string make_missing_dirs(const fs::path& dir) {
  fs::path made;
  for (const fs::path& part : dir) {
    made /= part;
    const mode_t mode = made == dir ? 0700 : 0755;
    if (mkdir(made.c_str(), mode) != 0 && errno != EEXIST)
      return "cannot create " + made.string() + ": " + std::strerror(errno);
  }
  return "";
}

// Why memwatchd must not put its files in `dir`, an existing folder the operator named ("" when
// it may). It is never changed: a folder of this user's or root's that no one else may write
// in, or a sticky one like /tmp, where others cannot remove or rename what memwatchd creates
// there (its files are its user's alone: see the umask in main.cpp).
std::string existing_dir_problem(const fs::path& dir, const struct stat& st) {
  const std::string owner =
      "owned by uid " + std::to_string(st.st_uid) + " with mode " + protocol::mode_text(st.st_mode);
  if (!S_ISDIR(st.st_mode)) return dir.string() + " is not a directory";
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return dir.string() + " is " + owner + "; expected a folder of uid " +
           std::to_string(geteuid()) +
           "'s or root's: its owner could replace what memwatchd "
           "puts there";
  if ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0)
    return dir.string() + " is " + owner +
           ": others may write in it and it is not sticky, "
           "so anyone could replace what memwatchd puts there; name a private folder (or a "
           "sticky one like /tmp)";
  return "";
}

// In a folder others may write in, a file already at `path` must be this user's own.
std::string foreign_file_problem(const fs::path& path, const struct stat& dir_st) {
  struct stat st {};
  if ((dir_st.st_mode & 022) == 0 || lstat(path.c_str(), &st) != 0) return "";
  if (!S_ISLNK(st.st_mode) && st.st_uid == geteuid()) return "";
  return path.string() + " already exists in the shared folder " + path.parent_path().string() +
         " and is " +
         (S_ISLNK(st.st_mode) ? std::string("a symbolic link")
                              : "owned by uid " + std::to_string(st.st_uid)) +
         "; remove it, or name another path";
}

// Readies the folder of `path` (an ipc socket or the store): the default runtime folder must be
// private (made 0700 when missing); a folder named by the operator is made 0700 when missing and
// otherwise judged by existing_dir_problem.
std::string prepare_dir_of(const fs::path& path) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (dir == fs::path(protocol::default_runtime_dir()))
    return protocol::ensure_private_dir(dir.string());
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return "cannot use " + dir.string() + ": " + std::strerror(errno);
    return make_missing_dirs(dir);
  }
  std::string problem = existing_dir_problem(dir, st);
  if (problem.empty()) problem = foreign_file_problem(path, st);
  return problem;
}

// Loopback only: 127.0.0.0/8, ::1, localhost, or the loopback interface by name.
bool is_loopback_host(std::string_view host) {
  return host.starts_with("127.") || host == "localhost" || host == "[::1]" || host == "::1" ||
         host == "lo";
}

// A tcp endpoint anyone on the network can reach: neither encrypted nor authenticated without
// CURVE, so feeding it runs poisons every model, and its query socket reads every run.
bool is_open_network_endpoint(std::string_view endpoint) {
  constexpr std::string_view tcp = "tcp://";
  if (!endpoint.starts_with(tcp)) return false;
  const std::string_view address = endpoint.substr(tcp.size());
  return !is_loopback_host(address.substr(0, address.rfind(':')));
}

// `text` in lines of at most 96 columns, each after `indent`.
std::string wrapped(const std::string& text, const std::string& indent) {
  std::string out, line;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > 96) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + indent + line;
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

namespace {

// One entry per option: its flag, the word of its value ("" for a switch), how it is applied
// (an error, or empty), and its help, from which `memwatchd --help` is made.
struct DaemonOption {
  std::string_view flag;
  std::string_view older_spelling;  // still accepted, so existing scripts keep working; "": none
  std::string_view value;
  std::string (*apply)(Options& o, const std::string& value);
  std::string_view help;
  std::string (*default_text)();  // null: none to say
};

std::string watch_number(double& slot, double (*parse)(std::string_view), const std::string& text,
                         const char* expected) {
  const double v = parse(text);
  if (v < 0) return std::string("expected ") + expected + ", got '" + text + "'";
  slot = v;
  return {};
}

const DaemonOption kOptions[] = {
    {"--ingest", "", "EP",
     [](Options& o, const std::string& v) { return o.ingest = v, std::string(); },
     "where shims report (ZeroMQ ROUTER)", protocol::default_ingest_endpoint},
    {"--query", "", "EP",
     [](Options& o, const std::string& v) { return o.query = v, std::string(); },
     "JSON requests (ZeroMQ REP)", protocol::default_query_endpoint},
    {"--events", "", "EP",
     [](Options& o, const std::string& v) { return o.events = v, std::string(); },
     "warnings and new models (ZeroMQ PUB)", protocol::default_events_endpoint},
    {"--store", "--db", "PATH|URL",
     [](Options& o, const std::string& v) { return o.store = v, std::string(); },
     "the store: a SQLite file, or a PostgreSQL database several daemons share "
     "(postgresql://USER@HOST/DB; the password from ~/.pgpass or PGPASSFILE, never here)",
     default_store},
    {"--queue", "", "PATH",
     [](Options& o, const std::string& v) { return o.queue = v, std::string(); },
     "with a PostgreSQL store: the SQLite file where runs wait while the server is unreachable, "
     "written to it in order when it answers again (one file per daemon)",
     default_queue},
    {"--queue-limit", "", "SAMPLES",
     [](Options& o, const std::string& v) {
       std::int64_t n = 0;
       const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
       if (ec != std::errc() || end != v.data() + v.size() || n < 0)
         return "expected a number of samples like 1000000, got '" + v + "'";
       o.queue_limit = n;
       return std::string();
     },
     "samples the queue holds; beyond them new samples are dropped and counted (runs are always "
     "queued, each with its final peaks)",
     [] { return std::string("1000000"); }},
    {"--curve-keys", "", "DIR",
     [](Options& o, const std::string& v) { return o.curve_keys = v, std::string(); },
     "CurveZMQ on all three sockets, with DIR/server.key as the daemon's secret key; only "
     "clients whose public key is DIR/client.pub or DIR/clients/*.pub are let in (make DIR: "
     "`memwatch keygen DIR`)",
     nullptr},
    {"--insecure-network", "", "",
     [](Options& o, const std::string&) { return o.insecure_network = true, std::string(); },
     "allow a tcp endpoint beyond loopback without --curve-keys (refused otherwise: anyone who "
     "reaches it could send or read runs)",
     nullptr},
    {"--metrics", "", "ADDR",
     [](Options& o, const std::string& v) {
       std::string host, error;
       int port = 0;
       if (parse_metrics_address(v, host, port, error)) o.metrics = v;
       return error;
     },
     "serve Prometheus metrics at http://ADDR/metrics: PORT (on 127.0.0.1) or HOST:PORT", nullptr},
    {"--foreground", "", "",
     [](Options& o, const std::string&) { return o.foreground = true, std::string(); },
     "stay in the foreground (default: detach)", nullptr},
    {"--warn-share", "", "SHARE",
     [](Options& o, const std::string& v) {
       return watch_number(o.watch.share, protocol::parse_watch_share, v,
                           "a share like 0.9 or 90%");
     },
     "warn when a run's live memory passes this share of its capacity (0.9 or 90%)",
     [] { return std::string("90%"); }},
    {"--warn-horizon", "", "SECONDS",
     [](Options& o, const std::string& v) {
       return watch_number(o.watch.horizon_s, protocol::parse_watch_seconds, v,
                           "seconds like 30 (0: never)");
     },
     "... or its growth is on course to within this many seconds (0: never)",
     [] { return std::string("30"); }},
    {"--axes", "", "P=K,...",
     [](Options& o, const std::string& v) {
       try {
         o.axes = model::parse_axes(v);
       } catch (const std::invalid_argument& e) {
         return std::string(e.what());
       }
       return std::string();
     },
     "in every workload with a parameter P, P spans K axes of the trainer's tensors (dim=3 for "
     "a cube's edge): its models are polynomials of degree K in P that carry P^K",
     nullptr},
};

const DaemonOption* find_option(std::string_view flag) {
  for (const DaemonOption& option : kOptions)
    if (option.flag == flag || (!option.older_spelling.empty() && option.older_spelling == flag))
      return &option;
  return nullptr;
}

// Every endpoint an endpoint, tcp://:PORT on loopback, and none open to the network unguarded.
std::string check_endpoints(Options& o) {
  for (std::string* e : {&o.ingest, &o.query, &o.events}) {
    if (!protocol::is_endpoint(*e))
      return "'" + *e + "' is not an endpoint: expected ipc://PATH or tcp://[HOST]:PORT";
    *e = loopback_if_no_host(*e);
    if (is_open_network_endpoint(*e) && o.curve_keys.empty() && !o.insecure_network)
      return *e +
             " is open to the network without --curve-keys: anyone who reaches it could "
             "send runs or read every run. Give --curve-keys DIR (`memwatch keygen DIR`), "
             "bind 127.0.0.1, or say --insecure-network on a network you trust";
  }
  return {};
}

}  // namespace

std::optional<Options> parse_options(std::span<char* const> args, std::string& error) {
  Options o;
  o.ingest = protocol::default_ingest_endpoint();
  o.query = protocol::default_query_endpoint();
  o.events = protocol::default_events_endpoint();
  o.store = default_store();
  o.queue = default_queue();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    const DaemonOption* option = find_option(flag);
    if (option == nullptr) {
      error = "unknown option '" + std::string(flag) + "' (see memwatchd --help)";
      return std::nullopt;
    }
    std::string value;
    if (!option->value.empty()) {
      if (i + 1 >= args.size()) {
        error = std::string(flag) + " needs a value";
        return std::nullopt;
      }
      value = args[++i];
    }
    if (std::string problem = option->apply(o, value); !problem.empty()) {
      error = std::string(flag) + ": " + problem;
      return std::nullopt;
    }
  }
  if (!(error = check_endpoints(o)).empty()) return std::nullopt;
  return o;
}

bool prepare_paths(const Options& o, std::string& error) {
  for (const std::string& e : {o.ingest, o.query, o.events}) {
    if (!e.starts_with("ipc://")) continue;
    if (!(error = prepare_dir_of(e.substr(6))).empty()) return false;
  }
  // A PostgreSQL store is a server's, not a folder of ours; its local queue is a file of ours.
  error = prepare_dir_of(is_postgres_location(o.store) ? o.queue : o.store);
  return error.empty();
}

std::string options_help() {
  std::string usage;
  std::string lines;
  for (const DaemonOption& option : kOptions) {
    const std::string word =
        std::string(option.flag) + (option.value.empty() ? "" : " " + std::string(option.value));
    usage += (usage.empty() ? "[" : " [") + word + "]";
    std::string help = std::string(option.help);
    if (option.default_text != nullptr) help += "; default " + option.default_text();
    const std::string older =
        option.older_spelling.empty()
            ? ""
            : " (or " + std::string(option.older_spelling) + ", its older spelling)";
    lines += "  " + word + older + "\n" + wrapped(help, "      ") + "\n";
  }
  return "usage: memwatchd\n" + wrapped(usage, "    ") + "\n" + lines +
         "A missing folder is created (the last one 0700) and an existing one never changed: the\n"
         "default folder must be this user's with mode 0700, a named one this user's or root's "
         "and\n"
         "writable by no one else unless sticky (like /tmp); files are made with umask 077 (see\n"
         "docs/security.md). tcp://:PORT binds to 127.0.0.1 only; to take runs from other nodes,\n"
         "bind tcp://0.0.0.0:PORT with --curve-keys.\n";
}

}  // namespace memwatch::daemon
