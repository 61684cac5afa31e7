// The shim's settings as users, `memwatch run` and `memwatch sweep` give them: environment
// variables, one entry each. The shim reads them in this order (interposer/settings/config.cpp
// binds each to its parser and checks that it covers this table); `memwatch env` prints the table,
// and the README's table is tested against that print.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace memwatch::protocol {

enum class ShimOption {
  report,
  endpoint,
  curve_keys,
  workload,
  argv_params,  // before params: MEMWATCH_PARAMS wins over the program's own flags
  config_params,
  params,
  capacity,
  on_oom,
  warn_share,
  warn_horizon,
  allocator,
  batch_bytes,
  signals,
  cupti,
  job,
  scheduler_job,
};

struct ShimOptionInfo {
  ShimOption id;
  const char* variable;    // MEMWATCH_..., null-terminated for getenv
  std::string_view usage;  // what follows the name in the documentation: "=PATH", ""
  std::string_view meaning;
  std::string_view default_text;
};

inline constexpr std::array kShimOptions{
    ShimOptionInfo{ShimOption::report, "MEMWATCH_REPORT", "=PATH",
                   "write the run's report as JSON at exit; `%p` becomes the pid", "no report"},
    ShimOptionInfo{ShimOption::endpoint, "MEMWATCH_ENDPOINT", "",
                   "the daemon's ingest endpoint (`ipc://PATH` or `tcp://HOST:PORT`)",
                   "`ipc://$XDG_RUNTIME_DIR/memwatch/ingest`, else "
                   "`ipc:///tmp/memwatch-$UID/ingest`; that folder only when it is this user's "
                   "and 0700 (else one line, no daemon link)"},
    ShimOptionInfo{ShimOption::curve_keys, "MEMWATCH_CURVE_KEYS", "=DIR",
                   "report as a CurveZMQ client: `DIR/server.pub`, `DIR/client.key`, "
                   "`DIR/client.pub` (see *Several nodes*); unreadable keys: one line on stderr, "
                   "no daemon link",
                   "plain"},
    ShimOptionInfo{ShimOption::workload, "MEMWATCH_WORKLOAD", "",
                   "workload name: letters, digits, `_`, `-`, `.`",
                   "the program's name; for an interpreter, the script or module it runs "
                   "(`python3 train.py`: `train`; `python3 -m pkg.train`: `pkg.train`)"},
    ShimOptionInfo{ShimOption::argv_params, "MEMWATCH_ARGV_PARAMS", "=--batch-size:batch,--dim:dim",
                   "take parameters from the program's own flags (`--flag v` and `--flag=v`); "
                   "`MEMWATCH_PARAMS` wins",
                   "none"},
    ShimOptionInfo{ShimOption::config_params, "MEMWATCH_CONFIG_PARAMS",
                   "=--config:loaders.batch_size:batch",
                   "take parameters from the YAML or JSON file the program's own flag names: "
                   "`FLAG:KEY:NAME`, KEY dotted with `[i]` for a list element; a list without "
                   "`[i]` gives the product of its elements (a patch's volume); "
                   "`MEMWATCH_PARAMS` wins",
                   "none"},
    ShimOptionInfo{ShimOption::params, "MEMWATCH_PARAMS", "=batch=4,dim=128",
                   "numeric run parameters", "none"},
    ShimOptionInfo{ShimOption::capacity, "MEMWATCH_CAPACITY", "=host=24GiB,device0=80GiB",
                   "capacities to judge against (`K`/`KiB`=1024, `KB`=1000, ...)",
                   "host: the cgroup limit, else MemTotal; devices: NVML"},
    ShimOptionInfo{ShimOption::on_oom, "MEMWATCH_ON_OOM", "=warn|abort|off",
                   "what a predicted OOM does (`abort`: exit status 75 before `main`)", "`warn`"},
    ShimOptionInfo{ShimOption::warn_share, "MEMWATCH_WARN_SHARE", "=90%",
                   "warn while running when live memory (host, or a device's) passes this share "
                   "of its capacity (`0.9` or `90%`)",
                   "`90%`"},
    ShimOptionInfo{ShimOption::warn_horizon, "MEMWATCH_WARN_HORIZON", "=30",
                   "... or when its growth is on course to pass that share within this many "
                   "seconds; `0`: no trend warning",
                   "`30`"},
    ShimOptionInfo{ShimOption::allocator, "MEMWATCH_ALLOCATOR", "=system|jemalloc",
                   "`jemalloc` also hosts the program's heap on jemalloc (the shim's own copy)",
                   "`system`"},
    ShimOptionInfo{ShimOption::batch_bytes, "MEMWATCH_BATCH_BYTES", "=SIZE",
                   "per-thread batch for small blocks, 0 to 128KiB", "`64KiB`"},
    ShimOptionInfo{ShimOption::signals, "MEMWATCH_SIGNALS", "=on|off",
                   "write the report on fatal signals (only where the program left the default "
                   "action)",
                   "`on`"},
    ShimOptionInfo{ShimOption::cupti, "MEMWATCH_CUPTI", "=auto|off|PATH",
                   "count device memory through CUPTI once the program brought CUDA", "`auto`"},
    ShimOptionInfo{ShimOption::job, "MEMWATCH_JOB", "=PID",
                   "the job this process is part of, by its first process's pid: set by that "
                   "process for everything it starts (see *A job's processes*); `memwatch run` "
                   "and `memwatch sweep` start each run as a new job",
                   "a new job, rooted at this process"},
    ShimOptionInfo{ShimOption::scheduler_job, "MEMWATCH_SCHEDULER_JOB", "=ID",
                   "the batch scheduler's job the run is tagged with: memwatch's Slurm plugin "
                   "sets `JOBID.batch` in a batch script, as `sacct` names that step",
                   "`SLURM_JOB_ID`, `.SLURM_STEP_ID` inside a step"},
};

constexpr const ShimOptionInfo& shim_option(ShimOption id) {
  return kShimOptions[static_cast<std::size_t>(id)];
}

// The table in the order of the enum, so that shim_option is an index.
constexpr bool shim_options_in_order() {
  for (std::size_t i = 0; i < kShimOptions.size(); ++i)
    if (static_cast<std::size_t>(kShimOptions[i].id) != i) return false;
  return true;
}
static_assert(shim_options_in_order());

// One row of the README's table: | `NAME=USAGE` | meaning | default |, pipes escaped.
inline std::string shim_option_markdown_row(const ShimOptionInfo& o) {
  std::string usage;
  for (char c : o.usage) usage += c == '|' ? std::string("\\|") : std::string(1, c);
  return "| `" + std::string(o.variable) + usage + "` | " + std::string(o.meaning) + " | " +
         std::string(o.default_text) + " |";
}

}  // namespace memwatch::protocol
