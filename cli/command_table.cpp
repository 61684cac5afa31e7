// The command table: one line per subcommand, in the order `memwatch help` lists them.
#include "commands.hpp"

#include <array>

namespace memwatch::cli {

// Each cmd_<name>.cpp defines its entry point; declared here, where the table needs it.
int cmd_version(std::span<char* const> args);
int cmd_sweep(std::span<char* const> args);

std::span<const Command> commands() {
  static constexpr std::array table{
      Command{"sweep", "run a command over a parameter grid under the shim, one CSV row a run",
              cmd_sweep},
      Command{"version", "print memwatch's version", cmd_version},
  };
  return table;
}

}  // namespace memwatch::cli
