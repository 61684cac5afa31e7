#include "settings/config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>

#include "memwatch/protocol/endpoints.hpp"
#include "memwatch/protocol/shim_options.hpp"
#include "settings/config_file.hpp"
#include "settings/program_name.hpp"

namespace memwatch::shim {

namespace {

void copy_text(char* dst, std::size_t capacity, std::string_view src) {
  const std::size_t n = std::min(capacity - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

using protocol::parse_finite;

// Workload and parameter names: the protocol's rule, which the daemon applies too.
using protocol::valid_name;
static_assert(sizeof(Param::name) > protocol::kMaxNameLength);

// Calls fn(item) for each comma-separated item; stops at the first error fn returns.
template <typename Fn>
std::string for_each_item(std::string_view list, Fn fn) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = trim(list.substr(0, comma));
    if (!item.empty()) {
      std::string error = fn(item);
      if (!error.empty()) return error;
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return {};
}

std::string set_param(Config& config, std::string_view name, double value) {
  for (int i = 0; i < config.param_count; ++i) {
    if (name == config.params[i].name) {
      config.params[i].value = value;
      return {};
    }
  }
  if (config.param_count == kMaxParams)
    return "at most " + std::to_string(kMaxParams) + " parameters";
  Param& p = config.params[config.param_count++];
  copy_text(p.name, sizeof p.name, name);
  p.value = value;
  return {};
}

}  // namespace

std::string config_parse_params(std::string_view text, Config& config) {
  return for_each_item(text, [&](std::string_view item) -> std::string {
    std::string_view name;
    double value = 0;
    if (!protocol::parse_param(item, name, value))
      return "expected " + std::string(protocol::kParamListForm) + ", got '" + std::string(item) +
             "'";
    return set_param(config, name, value);
  });
}

namespace {

// The value the program's own command line gives `flag` (`--flag v` or `--flag=v`), or nothing.
std::optional<std::string_view> flag_value(std::string_view flag, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == flag && i + 1 < argc) return std::string_view(argv[i + 1]);
    if (word.size() > flag.size() && word.starts_with(flag) && word[flag.size()] == '=')
      return word.substr(flag.size() + 1);
  }
  return std::nullopt;
}

}  // namespace

std::string config_parse_argv_params(std::string_view spec, int argc, char** argv, Config& config) {
  return for_each_item(spec, [&](std::string_view item) -> std::string {
    const std::size_t colon = item.rfind(':');
    if (colon == std::string_view::npos || !item.starts_with("-") ||
        !valid_name(item.substr(colon + 1)))
      return "expected --flag:name[,--flag:name...], got '" + std::string(item) + "'";
    const std::string_view flag = item.substr(0, colon);
    const std::string_view name = item.substr(colon + 1);
    const auto value = flag_value(flag, argc, argv);
    if (!value) return {};
    double number = 0;
    if (!parse_finite(*value, number))
      return "the program's " + std::string(flag) + " is '" + std::string(*value) +
             "', not a number (parameter '" + std::string(name) + "' left out)";
    return set_param(config, name, number);
  });
}

std::string config_parse_config_params(std::string_view spec, int argc, char** argv,
                                       Config& config) {
  std::string errors;
  auto say = [&](const std::string& e) { errors += (errors.empty() ? "" : "; ") + e; };
  // Every item on its own: a bad one leaves its parameter out, never the others.
  for_each_item(spec, [&](std::string_view item) -> std::string {
    const std::size_t first = item.find(':'), last = item.rfind(':');
    if (first == last || !item.starts_with("-") || !valid_name(item.substr(last + 1))) {
      say("expected --flag:key:name[,...], got '" + std::string(item) + "'");
      return {};
    }
    const std::string_view flag = item.substr(0, first);
    const std::string_view key = item.substr(first + 1, last - first - 1);
    const std::string_view name = item.substr(last + 1);
    const auto path = flag_value(flag, argc, argv);
    if (!path) return {};  // the program was not given that file this time
    const ConfigNumber n = config_file_number(std::string(*path), key);
    if (!n.error.empty()) {
      say(n.error + " (parameter '" + std::string(name) + "' left out)");
      return {};
    }
    if (std::string e = set_param(config, name, n.value); !e.empty()) say(e);
    return {};
  });
  return errors;
}

std::string config_parse_capacity(std::string_view text, Config& config) {
  Config parsed = config;
  std::string error = for_each_item(text, [&](std::string_view item) -> std::string {
    const std::size_t eq = item.find('=');
    const std::string expected =
        "expected host=SIZE[,deviceN=SIZE...] with sizes like 24GiB, got '" + std::string(item) +
        "'";
    if (eq == std::string_view::npos) return expected;
    const std::string_view key = trim(item.substr(0, eq));
    const std::int64_t bytes = config_parse_size(item.substr(eq + 1));
    if (bytes <= 0) return expected;
    if (key == "host") {
      parsed.host_capacity = bytes;
      return {};
    }
    int device = -1;
    if (key.starts_with("device")) {
      const std::string_view digits = key.substr(6);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), device);
      if (ec != std::errc() || end != digits.data() + digits.size()) device = -1;
    }
    if (device < 0 || device >= kMaxDevices) return expected;
    parsed.device_capacity[device] = bytes;
    return {};
  });
  if (error.empty()) config = parsed;
  return error;
}

const Param* config_find_param(const Config& config, std::string_view name) {
  for (int i = 0; i < config.param_count; ++i)
    if (name == config.params[i].name) return &config.params[i];
  return nullptr;
}

namespace {

using protocol::ShimOption;

struct ProgramArgs {
  int argc;
  char** argv;
};

// Each reads one variable's value into the configuration; an empty string when it was good,
// else what was expected (the caller names the variable and says the value is ignored).
using ApplyOption = std::string (*)(std::string_view value, Config& config, ProgramArgs args);

std::string got(std::string_view expected, std::string_view value) {
  return std::string(expected) + ", got '" + std::string(value) + "'";
}

template <std::size_t N>
std::string apply_text(char (&field)[N], std::string_view expected, std::string_view value) {
  if (value.size() >= N) return std::string(expected);
  copy_text(field, N, value);
  return {};
}

std::string apply_report(std::string_view v, Config& c, ProgramArgs) {
  return apply_text(c.report_path, "expected a path shorter than 4096 bytes", v);
}

std::string apply_endpoint(std::string_view v, Config& c, ProgramArgs) {
  const std::string expected = got("expected ipc://PATH or tcp://HOST:PORT", v);
  if (!protocol::is_endpoint(v)) return expected;
  return apply_text(c.endpoint, expected, v);
}

std::string apply_curve_keys(std::string_view v, Config& c, ProgramArgs) {
  return apply_text(c.curve_keys, "expected a folder path shorter than 4096 bytes", v);
}

std::string apply_workload(std::string_view v, Config& c, ProgramArgs) {
  const std::string expected = got("expected a name of letters, digits, '_', '-', '.'", v);
  if (!valid_name(v)) return expected;
  return apply_text(c.workload, expected, v);
}

std::string apply_scheduler_job(std::string_view v, Config& c, ProgramArgs) {
  const std::string expected = got("expected a job id of letters, digits, '_', '-', '.'", v);
  if (!valid_name(v)) return expected;
  return apply_text(c.scheduler_job, expected, v);
}

std::string apply_argv_params(std::string_view v, Config& c, ProgramArgs args) {
  return config_parse_argv_params(v, args.argc, args.argv, c);
}

std::string apply_config_params(std::string_view v, Config& c, ProgramArgs args) {
  return config_parse_config_params(v, args.argc, args.argv, c);
}

std::string apply_params(std::string_view v, Config& c, ProgramArgs) {
  Config parsed = c;  // all or nothing
  std::string error = config_parse_params(v, parsed);
  if (error.empty()) c = parsed;
  return error;
}

std::string apply_capacity(std::string_view v, Config& c, ProgramArgs) {
  return config_parse_capacity(v, c);
}

std::string apply_on_oom(std::string_view v, Config& c, ProgramArgs) {
  if (v == "warn")
    c.on_oom = OnOom::warn;
  else if (v == "abort")
    c.on_oom = OnOom::abort;
  else if (v == "off")
    c.on_oom = OnOom::off;
  else
    return got("expected warn, abort or off", v);
  return {};
}

std::string apply_warn_share(std::string_view v, Config& c, ProgramArgs) {
  const double share = protocol::parse_watch_share(v);
  if (share < 0) return got("expected a share of the capacity like 0.9 or 90%", v);
  c.watch.share = share;
  return {};
}

std::string apply_warn_horizon(std::string_view v, Config& c, ProgramArgs) {
  const double seconds = protocol::parse_watch_seconds(v);
  if (seconds < 0) return got("expected seconds like 30 or 30s (0: no trend warning)", v);
  c.watch.horizon_s = seconds;
  return {};
}

std::string apply_allocator(std::string_view v, Config& c, ProgramArgs) {
  if (!config_parse_allocator(v, c.allocator)) return got("expected system or jemalloc", v);
  return {};
}

std::string apply_batch_bytes(std::string_view v, Config& c, ProgramArgs) {
  const std::int64_t bytes = config_parse_size(v);
  if (bytes < 0 || bytes > kMaxBatchBytes) return got("expected a size from 0 to 128KiB", v);
  c.batch_bytes = bytes;
  return {};
}

std::string apply_signals(std::string_view v, Config& c, ProgramArgs) {
  if (v == "on")
    c.signals = true;
  else if (v == "off")
    c.signals = false;
  else
    return got("expected on or off", v);
  return {};
}

// Any other value names the libcupti to load (a path, or a name the loader searches for).
std::string apply_cupti(std::string_view v, Config& c, ProgramArgs) {
  return apply_text(c.cupti, "expected auto, off, or a library path shorter than 4096 bytes", v);
}

std::string apply_job(std::string_view v, Config& c, ProgramArgs) {
  int pid = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), pid);
  if (ec != std::errc() || end != v.data() + v.size() || pid <= 0)
    return got("expected the pid of the job's first process", v);
  c.job_root = pid;
  return {};
}

// The parser of each option of protocol::kShimOptions, in its order.
struct OptionParser {
  ShimOption id;
  ApplyOption apply;
};
constexpr OptionParser kParsers[] = {
    {ShimOption::report, apply_report},
    {ShimOption::endpoint, apply_endpoint},
    {ShimOption::curve_keys, apply_curve_keys},
    {ShimOption::workload, apply_workload},
    {ShimOption::argv_params, apply_argv_params},
    {ShimOption::config_params, apply_config_params},
    {ShimOption::params, apply_params},
    {ShimOption::capacity, apply_capacity},
    {ShimOption::on_oom, apply_on_oom},
    {ShimOption::warn_share, apply_warn_share},
    {ShimOption::warn_horizon, apply_warn_horizon},
    {ShimOption::allocator, apply_allocator},
    {ShimOption::batch_bytes, apply_batch_bytes},
    {ShimOption::signals, apply_signals},
    {ShimOption::cupti, apply_cupti},
    {ShimOption::job, apply_job},
    {ShimOption::scheduler_job, apply_scheduler_job},
};

constexpr bool parsers_follow_the_table() {
  if (std::size(kParsers) != protocol::kShimOptions.size()) return false;
  for (std::size_t i = 0; i < std::size(kParsers); ++i)
    if (kParsers[i].id != protocol::kShimOptions[i].id) return false;
  return true;
}
static_assert(parsers_follow_the_table(),
              "every option of protocol/shim_options.hpp has its parser here, in its order");

}  // namespace

bool config_parse_allocator(std::string_view text, Allocator& out) {
  if (text == "system")
    out = Allocator::system;
  else if (text == "jemalloc")
    out = Allocator::jemalloc;
  else
    return false;
  return true;
}

void config_load(Config& config, EnvLookup env, int argc, char** argv, Warn warn) {
  config = Config{};
  for (const protocol::ShimOptionInfo& option : protocol::kShimOptions) {
    const char* value = env(option.variable);
    if (value == nullptr || *value == '\0') continue;
    const ApplyOption apply = kParsers[static_cast<std::size_t>(option.id)].apply;
    const std::string error = apply(value, config, {argc, argv});
    if (!error.empty()) warn(std::string(option.variable) + ": " + error + " (ignored)");
  }
  if (config.endpoint[0] == '\0')
    copy_text(config.endpoint, sizeof config.endpoint, protocol::default_ingest_endpoint());
  if (config.workload[0] == '\0')
    copy_text(config.workload, sizeof config.workload, program_name(argc, argv));
  config_read_scheduler_job(config, env);
}

void config_read_scheduler_job(Config& config, EnvLookup env) {
  if (config.scheduler_job[0] != '\0') return;  // MEMWATCH_SCHEDULER_JOB named it
  const char* job = env("SLURM_JOB_ID");
  if (job == nullptr || !valid_name(job)) return;
  std::string id = job;
  if (const char* step = env("SLURM_STEP_ID"); step != nullptr && valid_name(step))
    id += std::string(".") + step;
  if (id.size() < sizeof config.scheduler_job)
    copy_text(config.scheduler_job, sizeof config.scheduler_job, id);
}

}  // namespace memwatch::shim
