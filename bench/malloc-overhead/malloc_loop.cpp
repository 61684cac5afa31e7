// A malloc-heavy loop: each thread keeps a window of live blocks of 16..1040 bytes and replaces
// one per step, as an allocation-bound program does. A window of 64 stays in glibc's
// per-thread cache (its fastest path: the worst case for a tool's relative cost); 4096 makes the
// allocator do the work a real program's heap makes it do. Prints the loop's own time, so that
// process start-up (and a tool's) is not in the figure.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

void loop(long steps, unsigned window_size, unsigned seed, volatile unsigned long* sink) {
  std::vector<void*> window(window_size, nullptr);
  unsigned x = seed;
  unsigned long touched = 0;
  for (long i = 0; i < steps; ++i) {
    x = x * 1664525u + 1013904223u;  // a fixed LCG: the same sizes in every run
    const unsigned slot = (x >> 8) & (window_size - 1);
    std::free(window[slot]);
    const std::size_t size = 16 + ((x >> 16) & 1023u);
    auto* p = static_cast<unsigned char*>(std::malloc(size));
    p[0] = static_cast<unsigned char>(i);
    touched += p[0];
    window[slot] = p;
  }
  for (void* p : window) std::free(p);
  *sink = touched;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s THREADS STEPS_PER_THREAD [WINDOW=64]\n", argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const long steps = std::atol(argv[2]);
  const long window = argc == 4 ? std::atol(argv[3]) : 64;
  if (threads < 1 || steps < 1 || window < 1 || (window & (window - 1)) != 0) {
    std::fprintf(stderr,
                 "malloc_loop: THREADS and STEPS_PER_THREAD must be positive, WINDOW a power of "
                 "two\n");
    return 2;
  }
  std::vector<unsigned long> sinks(static_cast<std::size_t>(threads) * 8);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(loop, steps, static_cast<unsigned>(window), 12345u + static_cast<unsigned>(t),
                      &sinks[static_cast<std::size_t>(t) * 8]);
  for (auto& th : pool) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.6f\n", seconds);
  return 0;
}
