// The subcommands of `memwatch`. Each lives in its own cmd_<name>.cpp and receives the words
// after its name; it returns the process exit status (2 for usage errors). Its --help text
// comes from its table of options (args.hpp), beside it.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace memwatch::cli {

using CommandFn = int (*)(std::span<char* const> args);
using HelpFn = std::string (*)();

struct Command {
  std::string_view name;
  std::string_view summary;
  CommandFn run;
  HelpFn help;  // `memwatch NAME --help`
};

// The command named `name`; nullptr when there is none.
const Command* find_command(std::string_view name);

std::span<const Command> commands();

}  // namespace memwatch::cli
