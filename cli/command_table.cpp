// The command table: one line per subcommand, in the order `memwatch help` lists them.
#include <array>

#include "commands.hpp"

namespace memwatch::cli {

// Each cmd_<name>.cpp defines its entry point; declared here, where the table needs it.
int cmd_version(std::span<char* const> args);
int cmd_run(std::span<char* const> args);
int cmd_status(std::span<char* const> args);
int cmd_workloads(std::span<char* const> args);
int cmd_runs(std::span<char* const> args);
int cmd_model(std::span<char* const> args);
int cmd_fit(std::span<char* const> args);
int cmd_predict(std::span<char* const> args);
int cmd_sweep(std::span<char* const> args);
int cmd_plot(std::span<char* const> args);
int cmd_max(std::span<char* const> args);
int cmd_keygen(std::span<char* const> args);
int cmd_env(std::span<char* const> args);
int cmd_advise(std::span<char* const> args);
int cmd_report(std::span<char* const> args);
int cmd_store(std::span<char* const> args);

std::span<const Command> commands() {
  static constexpr std::array table{
      Command{"sweep", "run a command over a parameter grid under the shim, one CSV row a run",
              cmd_sweep},
      Command{"run", "run a command under the shim: run [--workload W] [--param k=v] -- CMD",
              cmd_run},
      Command{"status", "the daemon's state [--query EP] [--curve-keys DIR] [--json]", cmd_status},
      Command{"workloads", "the workloads the daemon has runs of [--json]", cmd_workloads},
      Command{"runs", "the runs of a workload: runs --workload W [--json]", cmd_runs},
      Command{"model", "a workload's model: model --workload W --target T [--json]", cmd_model},
      Command{"fit", "fit a model of peak memory to runs (CSV or JSON Lines)", cmd_fit},
      Command{"predict", "predict a peak and its bound: --model M.json | --workload W, k=v ...",
              cmd_predict},
      Command{"max",
              "largest value whose bound fits: max --model M.json | --workload W, --vary P "
              "--capacity SIZE [k=v]",
              cmd_max},
      Command{"plot", "draw runs and model: plot --workload W --x P [--by P] --out F.png|.svg",
              cmd_plot},
      Command{"advise",
              "size a batch job at submission, one line of JSON: advise --workload W --params "
              "LIST [--mem-mb N] [--gres TRES] [--settings FILE]",
              cmd_advise},
      Command{"report",
              "a Slurm job's memory, requested vs predicted vs measured: report --slurm JOBID | "
              "--user U [--last N]",
              cmd_report},
      Command{"keygen", "CurveZMQ keys for a daemon and its nodes: keygen DIR [--force]",
              cmd_keygen},
      Command{"env", "the shim's environment variables: env [--markdown]", cmd_env},
      Command{"store", "move a store between SQLite and PostgreSQL: store copy SRC DST (DST empty)",
              cmd_store},
      Command{"version", "print memwatch's version", cmd_version},
  };
  return table;
}

}  // namespace memwatch::cli
