// The command table: one line per subcommand, in the order `memwatch help` lists them.
#include "commands.hpp"

#include <array>

namespace memwatch::cli {

// Each cmd_<name>.cpp defines its entry point; declared here, where the table needs it.
int cmd_version(std::span<char* const> args);
int cmd_fit(std::span<char* const> args);
int cmd_predict(std::span<char* const> args);

std::span<const Command> commands() {
  static constexpr std::array table{
      Command{"version", "print memwatch's version", cmd_version},
      Command{"fit", "fit a model of peak memory to runs (CSV or JSON Lines)", cmd_fit},
      Command{"predict", "predict peak memory and its upper bound from a fitted model",
              cmd_predict},
  };
  return table;
}

}  // namespace memwatch::cli
