#include <cstdio>
#include <span>
#include <string>

#include "args.hpp"

namespace memwatch::cli {

std::string help_version() {
  return usage_text("version", {"", "Prints memwatch's version.", {}});
}

int cmd_version(std::span<char* const> argv) {
  const Args args(argv, {});
  args.refuse_positional();
  std::puts("memwatch 0.1.0");
  return 0;
}

}  // namespace memwatch::cli
