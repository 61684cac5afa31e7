#include "config.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

#include "memwatch/protocol/endpoints.hpp"

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

bool parse_double(std::string_view text, double& out) {
  text = trim(text);
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(out);
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() >= sizeof(Param::name)) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

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

std::string_view basename_of(const char* path) {
  std::string_view p = path;
  const std::size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

}  // namespace

std::int64_t config_parse_size(std::string_view text) {
  text = trim(text);
  std::size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  double number = 0;
  if (digits == 0 || !parse_double(text.substr(0, digits), number)) return -1;
  const std::string_view unit = trim(text.substr(digits));
  struct Unit {
    std::string_view name;
    double factor;
  };
  static constexpr Unit units[] = {
      {"", 1},           {"B", 1},          {"K", 0x1p10},     {"KiB", 0x1p10},
      {"KB", 1e3},       {"M", 0x1p20},     {"MiB", 0x1p20},   {"MB", 1e6},
      {"G", 0x1p30},     {"GiB", 0x1p30},   {"GB", 1e9},       {"T", 0x1p40},
      {"TiB", 0x1p40},   {"TB", 1e12},
  };
  for (const Unit& u : units) {
    if (unit == u.name) {
      const double bytes = number * u.factor;
      if (bytes > 0x1p62) return -1;
      return static_cast<std::int64_t>(std::llround(bytes));
    }
  }
  return -1;
}

std::string config_parse_params(std::string_view text, Config& config) {
  return for_each_item(text, [&](std::string_view item) -> std::string {
    const std::size_t eq = item.find('=');
    double value = 0;
    if (eq == std::string_view::npos || !valid_name(trim(item.substr(0, eq))) ||
        !parse_double(item.substr(eq + 1), value))
      return "expected name=number[,name=number...], got '" + std::string(item) + "'";
    return set_param(config, trim(item.substr(0, eq)), value);
  });
}

std::string config_parse_argv_params(std::string_view spec, int argc, char** argv,
                                     Config& config) {
  return for_each_item(spec, [&](std::string_view item) -> std::string {
    const std::size_t colon = item.rfind(':');
    if (colon == std::string_view::npos || !item.starts_with("-") ||
        !valid_name(item.substr(colon + 1)))
      return "expected --flag:name[,--flag:name...], got '" + std::string(item) + "'";
    const std::string_view flag = item.substr(0, colon);
    const std::string_view name = item.substr(colon + 1);
    for (int i = 1; i < argc; ++i) {
      std::string_view word = argv[i];
      std::string_view value;
      if (word == flag && i + 1 < argc) {
        value = argv[i + 1];
      } else if (word.size() > flag.size() && word.starts_with(flag) && word[flag.size()] == '=') {
        value = word.substr(flag.size() + 1);
      } else {
        continue;
      }
      double number = 0;
      if (!parse_double(value, number))
        return "the program's " + std::string(flag) + " is '" + std::string(value) +
               "', not a number (parameter '" + std::string(name) + "' left out)";
      return set_param(config, name, number);
    }
    return {};
  });
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

void config_load(Config& config, EnvLookup env, int argc, char** argv, Warn warn) {
  config = Config{};
  config.on_oom = OnOom::warn;
  config.allocator = Allocator::system;
  config.signals = true;
  config.batch_bytes = kBatchBytes;

  auto bad = [&](const char* variable, const std::string& what) {
    warn(std::string(variable) + ": " + what + " (ignored)");
  };

  if (const char* v = env("MEMWATCH_REPORT"); v && *v) {
    if (std::strlen(v) >= sizeof config.report_path)
      bad("MEMWATCH_REPORT", "expected a path shorter than 4096 bytes");
    else
      copy_text(config.report_path, sizeof config.report_path, v);
  }

  if (const char* v = env("MEMWATCH_ENDPOINT"); v && *v) {
    if (!protocol::is_endpoint(v) || std::strlen(v) >= sizeof config.endpoint)
      bad("MEMWATCH_ENDPOINT",
          std::string("expected ipc://PATH or tcp://HOST:PORT, got '") + v + "'");
    else
      copy_text(config.endpoint, sizeof config.endpoint, v);
  }
  if (config.endpoint[0] == '\0')
    copy_text(config.endpoint, sizeof config.endpoint, protocol::default_ingest_endpoint());

  if (const char* v = env("MEMWATCH_CURVE_KEYS"); v && *v) {
    if (std::strlen(v) >= sizeof config.curve_keys)
      bad("MEMWATCH_CURVE_KEYS", "expected a folder path shorter than 4096 bytes");
    else
      copy_text(config.curve_keys, sizeof config.curve_keys, v);
  }

  if (const char* v = env("MEMWATCH_WORKLOAD"); v && *v) {
    if (!valid_name(v) || std::strlen(v) >= sizeof config.workload)
      bad("MEMWATCH_WORKLOAD",
          std::string("expected a name of letters, digits, '_', '-', '.', got '") + v + "'");
    else
      copy_text(config.workload, sizeof config.workload, v);
  }
  if (config.workload[0] == '\0' && argc > 0 && argv && argv[0])
    copy_text(config.workload, sizeof config.workload, basename_of(argv[0]));

  // Parameters from the program's own flags first, so that MEMWATCH_PARAMS overrides them.
  if (const char* v = env("MEMWATCH_ARGV_PARAMS"); v && *v) {
    const std::string error = config_parse_argv_params(v, argc, argv, config);
    if (!error.empty()) bad("MEMWATCH_ARGV_PARAMS", error);
  }
  if (const char* v = env("MEMWATCH_PARAMS"); v && *v) {
    Config parsed = config;
    const std::string error = config_parse_params(v, parsed);
    if (error.empty())
      config = parsed;
    else
      bad("MEMWATCH_PARAMS", error);
  }

  if (const char* v = env("MEMWATCH_CAPACITY"); v && *v) {
    const std::string error = config_parse_capacity(v, config);
    if (!error.empty()) bad("MEMWATCH_CAPACITY", error);
  }

  if (const char* v = env("MEMWATCH_ON_OOM"); v && *v) {
    const std::string_view s = v;
    if (s == "warn") config.on_oom = OnOom::warn;
    else if (s == "abort") config.on_oom = OnOom::abort;
    else if (s == "off") config.on_oom = OnOom::off;
    else bad("MEMWATCH_ON_OOM", "expected warn, abort or off, got '" + std::string(s) + "'");
  }

  if (const char* v = env("MEMWATCH_WARN_SHARE"); v && *v) {
    const double share = protocol::parse_watch_share(v);
    if (share < 0)
      bad("MEMWATCH_WARN_SHARE",
          "expected a share of the capacity like 0.9 or 90%, got '" + std::string(v) + "'");
    else
      config.watch.share = share;
  }

  if (const char* v = env("MEMWATCH_WARN_HORIZON"); v && *v) {
    const double seconds = protocol::parse_watch_seconds(v);
    if (seconds < 0)
      bad("MEMWATCH_WARN_HORIZON",
          "expected seconds like 30 or 30s (0: no trend warning), got '" + std::string(v) + "'");
    else
      config.watch.horizon_s = seconds;
  }

  if (const char* v = env("MEMWATCH_ALLOCATOR"); v && *v) {
    const std::string_view s = v;
    if (s == "system") config.allocator = Allocator::system;
    else if (s == "jemalloc") config.allocator = Allocator::jemalloc;
    else bad("MEMWATCH_ALLOCATOR", "expected system or jemalloc, got '" + std::string(s) + "'");
  }

  if (const char* v = env("MEMWATCH_SIGNALS"); v && *v) {
    const std::string_view s = v;
    if (s == "on") config.signals = true;
    else if (s == "off") config.signals = false;
    else bad("MEMWATCH_SIGNALS", "expected on or off, got '" + std::string(s) + "'");
  }

  if (const char* v = env("MEMWATCH_BATCH_BYTES"); v && *v) {
    const std::int64_t bytes = config_parse_size(v);
    if (bytes < 0 || bytes > kMaxBatchBytes)
      bad("MEMWATCH_BATCH_BYTES",
          "expected a size from 0 to 128KiB, got '" + std::string(v) + "'");
    else
      config.batch_bytes = bytes;
  }
}

}  // namespace memwatch::shim
