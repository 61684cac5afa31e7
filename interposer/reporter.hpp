// The reporter thread: the only place where the shim does work on its own time. It samples the
// counters (never the hooks' job), warns once when live host memory crosses a share of the
// capacity, and hands every sample to a sink (the daemon connection plugs in there).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "counters.hpp"

namespace memwatch::shim {

struct ReporterOptions {
  std::chrono::milliseconds period{100};
  std::int64_t host_capacity_bytes = 0;  // 0: no capacity watch
  double warn_fraction = 0.9;
};

class Reporter {
 public:
  using Sink = std::function<void(const CounterSnapshot&)>;
  using Warning = std::function<void(std::int64_t live, std::int64_t capacity)>;

  Reporter() = default;
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;
  ~Reporter() { stop(); }

  // Starts the thread; it marks itself internal so its own allocations are not counted.
  void start(const ReporterOptions& options, Sink sink, Warning warning);
  // Wakes the thread, lets it take a last sample and joins it. Safe to call twice.
  void stop();
  // In a forked child: the thread did not survive fork; forget it without joining.
  void forget_after_fork() noexcept;

  [[nodiscard]] std::uint64_t samples_taken() const noexcept { return samples_; }

 private:
  void run();
  void sample();

  ReporterOptions options_;
  Sink sink_;
  Warning warning_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool warned_ = false;
  std::atomic<std::uint64_t> samples_{0};
};

}  // namespace memwatch::shim
