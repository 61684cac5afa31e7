// The subcommands of `memwatch`. Each lives in its own cmd_<name>.cpp and receives the words
// after its name; it returns the process exit status (2 for usage errors).
#pragma once

#include <span>
#include <string_view>

namespace memwatch::cli {

using CommandFn = int (*)(std::span<char* const> args);

struct Command {
  std::string_view name;
  std::string_view summary;
  CommandFn run;
};

std::span<const Command> commands();

}  // namespace memwatch::cli
