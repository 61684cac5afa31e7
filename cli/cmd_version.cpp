#include <cstdio>
#include <span>

namespace memwatch::cli {

int cmd_version(std::span<char* const>) {
  std::puts("memwatch 0.1.0");
  return 0;
}

}  // namespace memwatch::cli
