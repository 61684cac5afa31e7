#include "counting/counters.hpp"

#include <pthread.h>

#include <cstring>

namespace memwatch::shim {

constinit thread_local ThreadCounters tls_counters __attribute__((tls_model("initial-exec"))) = {};

namespace {

// Before the segment exists (hooks run before any constructor), counters go here.
CounterBlock g_static_block;
std::atomic<CounterBlock*> g_block{&g_static_block};
std::atomic<std::int64_t> g_batch{kBatchBytes};

// Thread-exit flushing: a pthread key whose destructor runs as each thread ends. Created on the
// first registration; pthread_key_create neither allocates nor locks in glibc.
pthread_key_t g_exit_key;
std::atomic<int> g_exit_key_state{0};  // 0 none, 1 creating, 2 ready, 3 unavailable

void on_thread_exit(void* arg) noexcept {
  auto* t = static_cast<ThreadCounters*>(arg);
  const std::int64_t pending = t->heap_delta;
  t->heap_delta = 0;
  t->batch_limit = 0;
  t->exited = true;
  CounterBlock& b = counters_block();
  if (pending != 0) {
    b.heap_live.fetch_add(pending, std::memory_order_relaxed);
    b.host_live.fetch_add(pending, std::memory_order_relaxed);
  }
  b.threads_live.fetch_sub(1, std::memory_order_relaxed);
}

bool exit_key_ready() noexcept {
  int state = g_exit_key_state.load(std::memory_order_acquire);
  if (state == 0 && g_exit_key_state.compare_exchange_strong(state, 1)) {
    const bool ok = pthread_key_create(&g_exit_key, on_thread_exit) == 0;
    g_exit_key_state.store(ok ? 2 : 3, std::memory_order_release);
    return ok;
  }
  while (state == 1) state = g_exit_key_state.load(std::memory_order_acquire);
  return state == 2;
}

void register_thread(ThreadCounters& t) noexcept {
  t.registered = true;
  {
    InternalScope internal;  // a second-level key block would be calloc'ed: the shim's
    if (exit_key_ready()) pthread_setspecific(g_exit_key, &t);
  }
  t.batch_limit = g_batch.load(std::memory_order_relaxed);
  CounterBlock& b = counters_block();
  const std::int64_t live = b.threads_live.fetch_add(1, std::memory_order_relaxed) + 1;
  counters_raise_peak(b.threads_peak, live);
}

void publish(std::atomic<std::int64_t>& live, std::atomic<std::int64_t>& peak,
             std::atomic<std::int64_t>& sum_live, std::atomic<std::int64_t>& sum_peak,
             std::int64_t delta) noexcept {
  const std::int64_t now = live.fetch_add(delta, std::memory_order_relaxed) + delta;
  const std::int64_t sum = sum_live.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) {
    counters_raise_peak(peak, now);
    counters_raise_peak(sum_peak, sum);
  }
}

}  // namespace

CounterBlock& counters_block() noexcept {
  return *g_block.load(std::memory_order_acquire);
}

void counters_use_block(CounterBlock* block) noexcept {
  g_block.store(block, std::memory_order_release);
}

void counters_init_block(CounterBlock& block, std::int32_t pid, double start_unix_s,
                         bool keep_peaks) noexcept {
  const CounterSnapshot s = counters_snapshot(counters_block());
  block.magic = CounterBlock::kMagic;
  block.version = CounterBlock::kBlockVersion;
  block.pid = pid;
  block.start_unix_s = start_unix_s;
  protocol::counters_store(block, s, keep_peaks);
  block.exited.store(0, std::memory_order_relaxed);
}

void counters_heap_flush_slow(ThreadCounters& t, std::int64_t delta) noexcept {
  if (!t.registered) register_thread(t);
  t.heap_delta = 0;
  if (delta == 0) return;
  CounterBlock& b = counters_block();
  publish(b.heap_live, b.heap_peak, b.host_live, b.host_peak, delta);
}

void counters_mmap_add(std::int64_t bytes) noexcept {
  if (bytes == 0) return;
  CounterBlock& b = counters_block();
  publish(b.mmap_live, b.mmap_peak, b.host_live, b.host_peak, bytes);
}

void counters_flush_thread() noexcept {
  ThreadCounters& t = tls_counters;
  const std::int64_t pending = t.heap_delta;
  if (pending != 0) counters_heap_flush_slow(t, pending);
}

void counters_set_batch(std::int64_t bytes) noexcept {
  if (bytes < 0) bytes = 0;
  if (bytes > kMaxBatchBytes) bytes = kMaxBatchBytes;
  g_batch.store(bytes, std::memory_order_relaxed);
  // Threads registered before the option was read (the main thread, usually) adopt it too.
  ThreadCounters& t = tls_counters;
  if (t.registered && !t.exited) t.batch_limit = bytes;
}

std::int64_t counters_batch() noexcept {
  return g_batch.load(std::memory_order_relaxed);
}

std::int64_t counters_error_bound() noexcept {
  return counters_block().threads_peak.load(std::memory_order_relaxed) * counters_batch();
}

void counters_device_add(int device, std::int64_t bytes) noexcept {
  if (device < 0 || device >= kMaxDevices || bytes == 0) return;
  CounterBlock& b = counters_block();
  publish(b.device_live[device], b.device_peak[device], b.device_sum_live, b.device_sum_peak,
          bytes);
}

void counters_pinned_add(std::int64_t bytes) noexcept {
  CounterBlock& b = counters_block();
  const std::int64_t now = b.pinned_live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (bytes > 0) counters_raise_peak(b.pinned_peak, now);
}

void counters_managed_add(std::int64_t bytes) noexcept {
  CounterBlock& b = counters_block();
  const std::int64_t now = b.managed_live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (bytes > 0) counters_raise_peak(b.managed_peak, now);
}

void counters_after_fork_child() noexcept {
  CounterBlock& b = counters_block();
  b.threads_live.store(1, std::memory_order_relaxed);
  b.threads_peak.store(1, std::memory_order_relaxed);
}

}  // namespace memwatch::shim
