// `memwatch <command> [args]`: dispatches to the command table; usage errors exit with 2.
// `memwatch help COMMAND` and `memwatch COMMAND --help` (or -h where an option may stand) print
// the command's own help.
#include <cstdio>
#include <exception>
#include <span>
#include <string_view>

#include "args.hpp"
#include "commands.hpp"

namespace {

using memwatch::cli::Command;

void print_commands() {
  std::puts("usage: memwatch <command> [options]\n\ncommands:");
  for (const auto& c : memwatch::cli::commands())
    std::printf("  %-10.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                static_cast<int>(c.summary.size()), c.summary.data());
  std::puts("\n`memwatch help COMMAND` or `memwatch COMMAND --help`: the command's options.");
}

int unknown(std::string_view name) {
  std::fprintf(stderr, "memwatch: unknown command '%.*s' (try `memwatch help`)\n",
               static_cast<int>(name.size()), name.data());
  return 2;
}

int run(const Command& c, std::span<char* const> args) {
  const auto name = static_cast<int>(c.name.size());
  try {
    return c.run(args);
  } catch (const memwatch::cli::HelpRequested&) {
    std::fputs(c.help().c_str(), stdout);
    return 0;
  } catch (const memwatch::cli::OptionError& e) {
    std::fprintf(stderr, "memwatch %.*s: %s (`memwatch %.*s --help` lists the options)\n", name,
                 c.name.data(), e.what(), name, c.name.data());
    return 2;
  } catch (const memwatch::cli::UsageError& e) {
    std::fprintf(stderr, "memwatch %.*s: %s\n", name, c.name.data(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memwatch %.*s: error: %s\n", name, c.name.data(), e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::span<char* const> words(argv + 1, static_cast<std::size_t>(argc > 0 ? argc - 1 : 0));
  if (words.empty()) {
    print_commands();
    return 2;
  }
  const std::string_view first = words[0];
  if (first == "help" || first == "--help" || first == "-h") {
    if (words.size() < 2) {
      print_commands();
      return 0;
    }
    const Command* c = memwatch::cli::find_command(words[1]);
    if (c == nullptr) return unknown(words[1]);
    std::fputs(c->help().c_str(), stdout);
    return 0;
  }
  const Command* c = memwatch::cli::find_command(first);
  return c == nullptr ? unknown(first) : run(*c, words.subspan(1));
}
