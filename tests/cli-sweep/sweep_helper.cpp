// A program for the sweep to run: `sweep-helper MIB [EXIT|abort|sleep]` allocates and touches MIB
// MiB, frees them, then exits with EXIT (0), aborts, or sleeps until killed. MIB may be a product,
// `4x8` (a known law of two parameters for `sweep --auto`), after a floor, `40+4x8`: 40 MiB
// allocated and freed first, as a trainer's start-up does. It exits 3 when the sweep did not give
// it the environment it promises.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

int main(int argc, char** argv) {
  for (const char* name : {"LD_PRELOAD", "MEMWATCH_PARAMS", "MEMWATCH_REPORT"})
    if (!std::getenv(name)) {
      std::fprintf(stderr, "sweep-helper: %s is not set\n", name);
      return 3;
    }
  if (argc < 2) return 4;
  const char* law = argv[1];
  if (const char* plus = std::strchr(law, '+')) {
    const auto floor = std::strtoull(law, nullptr, 10) << 20;
    auto* p = static_cast<char*>(std::malloc(floor));
    if (!p) return 5;
    std::memset(p, 1, floor);
    std::printf("floor %d\n", p[floor - 1]);
    std::free(p);
    law = plus + 1;
  }
  unsigned long long mib = 1;
  for (const char* factor = law; *factor;) {
    char* end = nullptr;
    mib *= std::strtoull(factor, &end, 10);
    factor = *end == 'x' ? end + 1 : end + std::strlen(end);
  }
  const auto bytes = mib << 20;
  if (bytes) {
    auto* p = static_cast<char*>(std::malloc(bytes));
    if (!p) return 5;
    std::memset(p, 1, bytes);
    std::printf("touched %d\n", p[bytes - 1]);
    std::free(p);
  }
  const std::string_view then = argc > 2 ? argv[2] : "0";
  if (then == "abort") std::abort();
  if (then == "sleep") std::this_thread::sleep_for(std::chrono::hours(1));
  std::fprintf(stderr, "sweep-helper: exiting with %s\n", argv[2] ? argv[2] : "0");
  return std::atoi(then.data());
}
