// The command table: one line per subcommand, in the order `memwatch help` lists them.
#include <algorithm>
#include <array>

#include "commands.hpp"

namespace memwatch::cli {

// Each cmd_<name>.cpp defines its entry point and its --help; declared here, where the table
// needs them.
#define MEMWATCH_COMMAND(name)                 \
  int cmd_##name(std::span<char* const> args); \
  std::string help_##name();
MEMWATCH_COMMAND(sweep)
MEMWATCH_COMMAND(run)
MEMWATCH_COMMAND(status)
MEMWATCH_COMMAND(workloads)
MEMWATCH_COMMAND(runs)
MEMWATCH_COMMAND(model)
MEMWATCH_COMMAND(fit)
MEMWATCH_COMMAND(predict)
MEMWATCH_COMMAND(max)
MEMWATCH_COMMAND(plot)
MEMWATCH_COMMAND(advise)
MEMWATCH_COMMAND(report)
MEMWATCH_COMMAND(keygen)
MEMWATCH_COMMAND(env)
MEMWATCH_COMMAND(store)
MEMWATCH_COMMAND(version)
#undef MEMWATCH_COMMAND

std::span<const Command> commands() {
  static constexpr std::array table{
      Command{"sweep", "run a command over a parameter grid under the shim, one CSV row a run",
              cmd_sweep, help_sweep},
      Command{"run", "run a command under the shim: run [--workload W] [--param k=v] -- CMD",
              cmd_run, help_run},
      Command{"status", "the daemon's state [--query EP] [--curve-keys DIR] [--json]", cmd_status,
              help_status},
      Command{"workloads", "the workloads the daemon has runs of [--json]", cmd_workloads,
              help_workloads},
      Command{"runs", "the runs of a workload: runs --workload W [--json]", cmd_runs, help_runs},
      Command{"model", "a workload's model: model --workload W --target T [--json]", cmd_model,
              help_model},
      Command{"fit", "fit a model of peak memory to runs (CSV or JSON Lines)", cmd_fit, help_fit},
      Command{"predict", "predict a peak and its bound: --model M.json | --workload W, k=v ...",
              cmd_predict, help_predict},
      Command{"max",
              "largest value whose bound fits: max --model M.json | --workload W, --vary P "
              "--capacity SIZE [k=v]",
              cmd_max, help_max},
      Command{"plot", "draw runs and model: plot --workload W --x P [--by P] --out F.png|.svg",
              cmd_plot, help_plot},
      Command{"advise",
              "size a batch job at submission, one line of JSON: advise --workload W --params "
              "LIST [--mem-mb N] [--gres TRES] [--settings FILE]",
              cmd_advise, help_advise},
      Command{"report",
              "a Slurm job's memory, requested vs predicted vs measured: report --slurm JOBID | "
              "--user U [--last N]",
              cmd_report, help_report},
      Command{"keygen", "CurveZMQ keys for a daemon and its nodes: keygen DIR [--force]",
              cmd_keygen, help_keygen},
      Command{"env", "the shim's environment variables: env [--markdown]", cmd_env, help_env},
      Command{"store", "move a store between SQLite and PostgreSQL: store copy SRC DST (DST empty)",
              cmd_store, help_store},
      Command{"version", "print memwatch's version", cmd_version, help_version},
  };
  return table;
}

const Command* find_command(std::string_view name) {
  const auto table = commands();
  const auto it =
      std::find_if(table.begin(), table.end(), [&](const Command& c) { return c.name == name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace memwatch::cli
