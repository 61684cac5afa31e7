#include "reporting/reporter.hpp"

#include <time.h>

#include <new>

namespace memwatch::shim {

void Reporter::start(const ReporterOptions& options, ReporterClient* client, Warning warning) {
  if (thread_.joinable()) return;
  options_ = options;
  client_ = client;
  warning_ = std::move(warning);
  stopping_ = false;
  exit_requested_.store(false, std::memory_order_relaxed);
  stopped_.store(false, std::memory_order_relaxed);
  thread_ = std::thread([this] {
    counters_thread_is_internal();
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
  exit_requested_.store(false, std::memory_order_relaxed);
  stopped_.store(false, std::memory_order_relaxed);
  host_watch_.reset();
  for (auto& w : device_watch_) w.reset();
}

void Reporter::run() {
  if (client_) client_->started();
  const auto asked_to_stop = [this] {
    return stopping_ || exit_requested_.load(std::memory_order_acquire);
  };
  std::unique_lock lock(mutex_);
  while (!asked_to_stop()) {
    lock.unlock();
    sample();
    lock.lock();
    wake_.wait_for(lock, options_.period, asked_to_stop);
  }
  lock.unlock();
  sample();
  if (client_) client_->stopping(snapshot());
  stopped_.store(true, std::memory_order_release);
}

bool Reporter::stop_before_exit(std::chrono::milliseconds deadline) noexcept {
  if (!thread_.joinable()) return false;
  exit_requested_.store(true, std::memory_order_release);
  // Polls with nanosleep (async-signal-safe): waking the thread would take its mutex, which a
  // signal handler must not, and the thread looks again within its period.
  constexpr long kPollNs = 2'000'000;
  for (auto waited = std::chrono::nanoseconds(0); waited < deadline;
       waited += std::chrono::nanoseconds(kPollNs)) {
    if (stopped_.load(std::memory_order_acquire)) return true;
    timespec pause{0, kPollNs};
    nanosleep(&pause, nullptr);
  }
  return stopped_.load(std::memory_order_acquire);
}

CounterSnapshot Reporter::snapshot() const {
  return counters_snapshot(options_.block != nullptr ? *options_.block : counters_block());
}

void Reporter::sample() {
  const CounterSnapshot s = snapshot();
  samples_.fetch_add(1, std::memory_order_relaxed);
  if (client_) client_->sampled(s);
  watch(s);
}

void Reporter::watch(const CounterSnapshot& s) {
  const double t =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  warn_if(-1, host_watch_.observe(t, s.host_live, options_.host_capacity_bytes, options_.watch));
  if (options_.device_capacity == nullptr) return;
  for (int i = 0; i < kMaxDevices; ++i) {
    if (s.device_peak[i] == 0) continue;  // a device the program never used has no trend
    warn_if(i, device_watch_[i].observe(t, s.device_live[i], options_.device_capacity(i),
                                        options_.watch));
  }
}

void Reporter::warn_if(int device, const protocol::WatchFinding& f) {
  if (f.kind == protocol::WatchKind::none || !warning_) return;
  warning_(CapacityWarning{device, options_.watch.share, f});
}

}  // namespace memwatch::shim
