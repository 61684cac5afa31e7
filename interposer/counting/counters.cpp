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
std::atomic<JobShare*> g_job{nullptr};

// Adds `delta` to a live figure and to the sum it is part of, raising their peaks; returns the
// figure's new value.
std::int64_t publish(std::atomic<std::int64_t>& live, std::atomic<std::int64_t>& peak,
                     std::atomic<std::int64_t>& sum_live, std::atomic<std::int64_t>& sum_peak,
                     std::int64_t delta) noexcept {
  const std::int64_t now = live.fetch_add(delta, std::memory_order_relaxed) + delta;
  const std::int64_t sum = sum_live.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) {
    counters_raise_peak(peak, now);
    counters_raise_peak(sum_peak, sum);
  }
  return now;
}

std::int64_t publish(std::atomic<std::int64_t>& live, std::atomic<std::int64_t>& peak,
                     std::int64_t delta) noexcept {
  const std::int64_t now = live.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) counters_raise_peak(peak, now);
  return now;
}

std::int64_t contribution(std::int64_t live, std::int64_t base) noexcept {
  return live > base ? live - base : 0;
}

// How much a change of `delta` that made one of this process's live figures `now` changes the
// process's contribution to its job (added to `mine`). Each change is one atomic step of the
// figure, so however threads interleave the shares add up to the contribution.
std::int64_t job_share(std::int64_t now, std::int64_t delta, std::int64_t base,
                       std::atomic<std::int64_t>& mine) noexcept {
  const std::int64_t d = contribution(now, base) - contribution(now - delta, base);
  if (d != 0) mine.fetch_add(d, std::memory_order_relaxed);
  return d;
}

JobShare* job() noexcept {
  return g_job.load(std::memory_order_acquire);
}

// One live figure of the block, by its members: the live value, its peak, and where the job's
// share of it is kept (the base it has in a snapshot, this process's contribution in its slot).
struct LiveFigure {
  std::atomic<std::int64_t> CounterBlock::*live;
  std::atomic<std::int64_t> CounterBlock::*peak;
  std::int64_t CounterSnapshot::*base;
  std::atomic<std::int64_t> protocol::JobContribution::*mine;
};
constexpr LiveFigure kThreads{&CounterBlock::threads_live, &CounterBlock::threads_peak,
                              &CounterSnapshot::threads_live, &protocol::JobContribution::threads};
constexpr LiveFigure kPinned{&CounterBlock::pinned_live, &CounterBlock::pinned_peak,
                             &CounterSnapshot::pinned_live, &protocol::JobContribution::pinned};
constexpr LiveFigure kManaged{&CounterBlock::managed_live, &CounterBlock::managed_peak,
                              &CounterSnapshot::managed_live, &protocol::JobContribution::managed};
constexpr LiveFigure kHeap{&CounterBlock::heap_live, &CounterBlock::heap_peak,
                           &CounterSnapshot::heap_live, &protocol::JobContribution::heap};
constexpr LiveFigure kMmap{&CounterBlock::mmap_live, &CounterBlock::mmap_peak,
                           &CounterSnapshot::mmap_live, &protocol::JobContribution::mmap};

// Adds `delta` to figure `f` of `b`, and this process's share of the change to its job's.
void add(CounterBlock& b, const LiveFigure& f, std::int64_t delta) noexcept {
  const std::int64_t now = publish(b.*f.live, b.*f.peak, delta);
  if (JobShare* j = job())
    if (const std::int64_t d = job_share(now, delta, j->base.*f.base, j->mine->*f.mine))
      publish(j->job->*f.live, j->job->*f.peak, d);
}

// The same for a part of the host's memory (heap, mappings), whose sum is its own figure.
void add_to_host(CounterBlock& b, const LiveFigure& f, std::int64_t delta) noexcept {
  const std::int64_t now = publish(b.*f.live, b.*f.peak, b.host_live, b.host_peak, delta);
  if (JobShare* j = job())
    if (const std::int64_t d = job_share(now, delta, j->base.*f.base, j->mine->*f.mine))
      publish(j->job->*f.live, j->job->*f.peak, j->job->host_live, j->job->host_peak, d);
}

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
  if (pending != 0) add_to_host(b, kHeap, pending);
  add(b, kThreads, -1);
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
  add(counters_block(), kThreads, 1);
}

}  // namespace

CounterBlock& counters_block() noexcept {
  return *g_block.load(std::memory_order_acquire);
}

CounterBlock& counters_static_block() noexcept {
  return g_static_block;
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
  block.processes.store(1, std::memory_order_relaxed);
  block.exited.store(0, std::memory_order_relaxed);
}

void counters_heap_flush_slow(ThreadCounters& t, std::int64_t delta) noexcept {
  if (!t.registered) register_thread(t);
  t.heap_delta = 0;
  if (delta != 0) add_to_host(counters_block(), kHeap, delta);
}

void counters_mmap_add(std::int64_t bytes) noexcept {
  if (bytes == 0) return;
  add_to_host(counters_block(), kMmap, bytes);
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
  const std::int64_t now = publish(b.device_live[device], b.device_peak[device], b.device_sum_live,
                                   b.device_sum_peak, bytes);
  if (JobShare* j = job())
    if (const std::int64_t d =
            job_share(now, bytes, j->base.device_live[device], j->mine->device[device]))
      publish(j->job->device_live[device], j->job->device_peak[device], j->job->device_sum_live,
              j->job->device_sum_peak, d);
}

void counters_pinned_add(std::int64_t bytes) noexcept {
  add(counters_block(), kPinned, bytes);
}

void counters_managed_add(std::int64_t bytes) noexcept {
  add(counters_block(), kManaged, bytes);
}

void counters_after_fork_child() noexcept {
  CounterBlock& b = counters_block();
  b.threads_live.store(1, std::memory_order_relaxed);
  b.threads_peak.store(1, std::memory_order_relaxed);
}

void counters_share_with_job(JobShare* share) noexcept {
  if (share == nullptr) {
    g_job.store(nullptr, std::memory_order_release);
    return;
  }
  // What the process holds beyond its base now joins the job as one change from the base.
  const CounterSnapshot s = counters_snapshot(counters_block());
  const CounterSnapshot& base = share->base;
  CounterBlock& j = *share->job;
  protocol::JobContribution& mine = *share->mine;
  auto initial = [](std::int64_t live, std::int64_t base_live, std::atomic<std::int64_t>& into) {
    const std::int64_t c = contribution(live, base_live);
    into.fetch_add(c, std::memory_order_relaxed);
    return c;
  };
  // A snapshot keeps a live figure under the same member as the base.
  for (const LiveFigure* f : {&kHeap, &kMmap})
    publish(j.*f->live, j.*f->peak, j.host_live, j.host_peak,
            initial(s.*f->base, base.*f->base, mine.*f->mine));
  for (const LiveFigure* f : {&kPinned, &kManaged, &kThreads})
    publish(j.*f->live, j.*f->peak, initial(s.*f->base, base.*f->base, mine.*f->mine));
  for (int i = 0; i < kMaxDevices; ++i)
    publish(j.device_live[i], j.device_peak[i], j.device_sum_live, j.device_sum_peak,
            initial(s.device_live[i], base.device_live[i], mine.device[i]));
  g_job.store(share, std::memory_order_release);
}

void counters_withdraw(CounterBlock& job, protocol::JobContribution& c) noexcept {
  auto take = [](std::atomic<std::int64_t>& a) { return a.exchange(0, std::memory_order_relaxed); };
  auto drop = [](std::atomic<std::int64_t>& a, std::int64_t v) {
    a.fetch_sub(v, std::memory_order_relaxed);
  };
  for (const LiveFigure* f : {&kHeap, &kMmap}) {
    const std::int64_t held = take(c.*f->mine);
    drop(job.*f->live, held);
    drop(job.host_live, held);
  }
  for (const LiveFigure* f : {&kPinned, &kManaged, &kThreads}) drop(job.*f->live, take(c.*f->mine));
  for (int i = 0; i < kMaxDevices; ++i) {
    const std::int64_t held = take(c.device[i]);
    drop(job.device_live[i], held);
    drop(job.device_sum_live, held);
  }
}

}  // namespace memwatch::shim
