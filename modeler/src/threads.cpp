#include "memwatch/model/threads.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace memwatch::model {

namespace {
std::atomic<std::size_t> requested_threads{0};
}  // namespace

std::size_t usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return static_cast<std::size_t>(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

void set_fit_threads(std::size_t threads) {
  requested_threads.store(threads);
}

std::size_t fit_threads() {
  static const std::size_t cpus = usable_cpus();
  const std::size_t requested = requested_threads.load();
  return requested == 0 ? cpus : requested;
}

}  // namespace memwatch::model
