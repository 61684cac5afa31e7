// `memwatch <command> [args]`: dispatches to the command table; usage errors exit with 2.
#include <cstdio>
#include <exception>
#include <span>
#include <string_view>

#include "args.hpp"
#include "commands.hpp"

namespace {

void print_help() {
  std::puts("usage: memwatch <command> [options]\n\ncommands:");
  for (const auto& c : memwatch::cli::commands())
    std::printf("  %-10.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                static_cast<int>(c.summary.size()), c.summary.data());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "help" || std::string_view(argv[1]) == "--help") {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  std::string_view name = argv[1];
  for (const auto& c : memwatch::cli::commands()) {
    if (c.name != name) continue;
    try {
      return c.run(std::span<char* const>(argv + 2, static_cast<std::size_t>(argc - 2)));
    } catch (const memwatch::cli::UsageError& e) {
      std::fprintf(stderr, "memwatch %.*s: %s\n", static_cast<int>(name.size()), name.data(),
                   e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "memwatch %.*s: error: %s\n", static_cast<int>(name.size()), name.data(),
                   e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "memwatch: unknown command '%s' (try `memwatch help`)\n", argv[1]);
  return 2;
}
