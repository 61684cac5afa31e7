#include "reporter.hpp"

#include <new>

namespace memwatch::shim {

void Reporter::start(const ReporterOptions& options, Sink sink, Warning warning) {
  if (thread_.joinable()) return;
  options_ = options;
  sink_ = std::move(sink);
  warning_ = std::move(warning);
  stopping_ = false;
  thread_ = std::thread([this] {
    ++tls_counters.internal;
    run();
  });
}

void Reporter::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Reporter::forget_after_fork() noexcept {
  // The parent's thread, mutex and condition variable may have been mid-use at fork: start over
  // with fresh ones and let go of the std::thread without joining (it does not exist here).
  new (&thread_) std::thread();
  new (&mutex_) std::mutex();
  new (&wake_) std::condition_variable();
  stopping_ = false;
  warned_ = false;
}

void Reporter::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    sample();
    lock.lock();
    wake_.wait_for(lock, options_.period, [this] { return stopping_; });
  }
  lock.unlock();
  sample();
}

void Reporter::sample() {
  const CounterSnapshot s = counters_snapshot(counters_block());
  samples_.fetch_add(1, std::memory_order_relaxed);
  if (sink_) sink_(s);
  const std::int64_t capacity = options_.host_capacity_bytes;
  if (!warned_ && capacity > 0 &&
      static_cast<double>(s.host_live) > options_.warn_fraction * static_cast<double>(capacity)) {
    warned_ = true;
    if (warning_) warning_(s.host_live, capacity);
  }
}

}  // namespace memwatch::shim
