// The shim's configuration, read once from the environment (and the program's own argv for
// MEMWATCH_ARGV_PARAMS). Fixed-size storage: the report is written from signal handlers too.
//
// A bad value never stops the program: it is reported in one line naming the variable and what
// was expected, and the default is kept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "counting/counters.hpp"
#include "memwatch/protocol/parse.hpp"
#include "memwatch/protocol/run_facts.hpp"
#include "memwatch/protocol/trend.hpp"

namespace memwatch::shim {

inline constexpr int kMaxParams = 32;

using protocol::OnOom;
enum class Allocator { system, jemalloc };

struct Param {
  char name[64];
  double value;
};

// One field or two per option of protocol/shim_options.hpp; the defaults are the table's.
struct Config {
  char report_path[4096] = {};  // empty: no report
  char endpoint[512] = {};
  char curve_keys[4096] = {};  // a `memwatch keygen` folder; empty: no CURVE
  char workload[128] = {};
  Param params[kMaxParams] = {};
  int param_count = 0;
  std::int64_t host_capacity = 0;                  // bytes; 0: unknown
  std::int64_t device_capacity[kMaxDevices] = {};  // bytes; 0: ask the device
  OnOom on_oom = OnOom::warn;
  protocol::WatchSettings watch;  // capacity warnings: the share, and the on-course horizon
  Allocator allocator = Allocator::system;
  bool signals = true;
  std::int64_t batch_bytes = kBatchBytes;
  char cupti[4096] = "auto";    // auto, off, or a libcupti's path
  int job_root = 0;             // the pid of the job's first process; 0: this process starts one
  char scheduler_job[64] = {};  // Slurm's JOBID or JOBID.STEP from its environment; empty: none
};

// Reads an environment variable; tests pass their own.
using EnvLookup = const char* (*)(const char* name);

// Fills `config` from the environment (the variables of protocol/shim_options.hpp, in its order)
// and argv. `warn` receives one message per bad value, naming the variable.
using Warn = void (*)(const std::string& message);
void config_load(Config& config, EnvLookup env, int argc, char** argv, Warn warn);

// The pieces, exposed for tests. Each returns an empty string on success, else what was wrong.
std::string config_parse_params(std::string_view text, Config& config);
std::string config_parse_argv_params(std::string_view spec, int argc, char** argv, Config& config);
// MEMWATCH_CONFIG_PARAMS: --flag:key:name items, each read from the file the program's --flag
// names; a bad item is said and left out, the others still taken.
std::string config_parse_config_params(std::string_view spec, int argc, char** argv,
                                       Config& config);
std::string config_parse_capacity(std::string_view text, Config& config);
// "24GiB", "1.5G", "512MB", "1000": bytes, or -1 when `text` is not a size.
inline std::int64_t config_parse_size(std::string_view text) {
  return protocol::parse_size(text);
}

// MEMWATCH_ALLOCATOR's values; also read before the configuration exists (real_functions.cpp).
bool config_parse_allocator(std::string_view text, Allocator& out);

// The batch scheduler's job the process runs in: Slurm's SLURM_JOB_ID, with .SLURM_STEP_ID
// inside a step; left empty when absent or not a plain name.
void config_read_scheduler_job(Config& config, EnvLookup env);

// The value of a parameter, or nullptr.
const Param* config_find_param(const Config& config, std::string_view name);

}  // namespace memwatch::shim
