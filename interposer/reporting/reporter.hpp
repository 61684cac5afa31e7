// The reporter thread: the only place where the shim does work on its own time. It samples the
// counters (never the hooks' job), watches live host and device memory against their capacities
// (protocol/trend.hpp: past a share of the capacity, or on course to pass it), and tells a
// client (the daemon link) when it starts, samples and stops.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "counting/counters.hpp"
#include "memwatch/protocol/trend.hpp"

namespace memwatch::shim {

// What the reporter thread drives; every call runs on that thread.
class ReporterClient {
 public:
  virtual ~ReporterClient() = default;
  virtual void started() {}
  virtual void sampled(const CounterSnapshot&) {}
  virtual void stopping(const CounterSnapshot&) {}
};

struct ReporterOptions {
  std::chrono::milliseconds period{100};
  const CounterBlock* block = nullptr;   // what is sampled and watched; null: the process's own
  std::int64_t host_capacity_bytes = 0;  // 0: no host watch
  // A device's capacity, 0 while unknown; asked on the reporter thread at each sample, so it
  // must neither lock nor allocate. Null: no device watch.
  std::int64_t (*device_capacity)(int device) noexcept = nullptr;
  protocol::WatchSettings watch;
};

// A warning of the capacity watch, at most one of each kind per memory and run.
struct CapacityWarning {
  int device = -1;  // -1: host memory
  double share = 0;
  protocol::WatchFinding finding;
};

class Reporter {
 public:
  using Warning = std::function<void(const CapacityWarning&)>;

  Reporter() = default;
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;
  ~Reporter() { stop(); }

  // Starts the thread; it marks itself internal so its own allocations are not counted.
  // `client` may be null; it must outlive the thread.
  void start(const ReporterOptions& options, ReporterClient* client, Warning warning);
  // Wakes the thread, lets it take a last sample and joins it. Safe to call twice.
  void stop();
  // In a forked child: the thread did not survive fork; forget it without joining.
  void forget_after_fork() noexcept;
  // From _exit, on any thread and perhaps in a signal handler: asks the thread for its last
  // sample and stop, and waits at most `deadline` for it to finish, taking no lock (the thread
  // sees the request within its period). False when it did not finish in time.
  bool stop_before_exit(std::chrono::milliseconds deadline) noexcept;

  [[nodiscard]] std::uint64_t samples_taken() const noexcept { return samples_; }

 private:
  void run();
  CounterSnapshot snapshot() const;
  void sample();
  void watch(const CounterSnapshot& s);
  void warn_if(int device, const protocol::WatchFinding& f);

  ReporterOptions options_;
  ReporterClient* client_ = nullptr;
  Warning warning_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> exit_requested_{false};
  std::atomic<bool> stopped_{false};
  protocol::CapacityWatch host_watch_;
  protocol::CapacityWatch device_watch_[kMaxDevices];
  std::atomic<std::uint64_t> samples_{0};
};

}  // namespace memwatch::shim
