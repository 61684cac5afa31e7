// The shim's counters: global live bytes and high-water marks per memory kind, fed by
// per-thread deltas so that the hooks' fast path touches only thread-local memory.
//
// Exactness: an allocation or free of kExactBytes or more is flushed at once together with
// whatever the thread had pending, so peaks made of large blocks are exact. Smaller ones wait in
// the thread's delta until it leaves (-kBatchBytes, kBatchBytes); the global live value is
// therefore within threads_live x kBatchBytes of the truth, and so is every peak. The batch is
// configurable (MEMWATCH_BATCH_BYTES, 0 = every call exact) up to kMaxBatchBytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "memwatch/protocol/counter_block.hpp"
#include "memwatch/protocol/job_block.hpp"

namespace memwatch::shim {

// The block's layout, its snapshot and the device slots are the protocol's: a watcher in another
// process reads them.
using protocol::CounterBlock;
using protocol::counters_snapshot;
using protocol::CounterSnapshot;
using protocol::kMaxDevices;

inline constexpr std::int64_t kBatchBytes = 64 * 1024;  // default per-thread batch
inline constexpr std::int64_t kMaxBatchBytes = 128 * 1024;
inline constexpr std::int64_t kExactBytes = 256 * 1024;
static_assert(kExactBytes >= 2 * kMaxBatchBytes, "a large block must overflow any batch");

// The block the counters go to now: a static one until the segment exists, then the segment's.
CounterBlock& counters_block() noexcept;
void counters_use_block(CounterBlock* block) noexcept;
// The process's own block in its own memory: where counting goes when no segment can be made.
CounterBlock& counters_static_block() noexcept;
// Fills `block` with the values of the block in use: at start-up peaks carry over; in a forked
// child (keep_peaks false) they restart from what the child inherited.
void counters_init_block(CounterBlock& block, std::int32_t pid, double start_unix_s,
                         bool keep_peaks) noexcept;

// Raises `peak` to at least `value`.
inline void counters_raise_peak(std::atomic<std::int64_t>& peak, std::int64_t value) noexcept {
  std::int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

// ---- per-thread state, read by every hook -------------------------------------------------

struct ThreadCounters {
  std::int64_t heap_delta;  // bytes not yet flushed to the global block
  // Fast-path bound: kBatchBytes once the thread is registered, 0 before, so the first call of
  // a thread (and every call after it left) takes the slow path with one comparison.
  std::int64_t batch_limit;
  // Non-zero while this thread runs memwatch's own code or the allocator's internals; its
  // allocations then are the shim's, not the program's.
  std::uint32_t internal;
  bool registered;
  bool exited;  // its pthread key destructor ran: late frees go straight to the block
};

// constinit: no dynamic initialisation, so no TLS wrapper call on the hooks' path.
extern constinit thread_local ThreadCounters tls_counters
    __attribute__((tls_model("initial-exec")));

// The calling thread runs memwatch's own work for the scope's lifetime: what it allocates then
// is the shim's (served from the shim's arena), never the program's. Scopes nest.
class InternalScope {
 public:
  InternalScope() noexcept { ++tls_counters.internal; }
  ~InternalScope() { --tls_counters.internal; }
  InternalScope(const InternalScope&) = delete;
  InternalScope& operator=(const InternalScope&) = delete;
};

// The calling thread is memwatch's own for the rest of its life (the reporter, ZeroMQ's).
inline void counters_thread_is_internal() noexcept {
  ++tls_counters.internal;
}

void counters_heap_flush_slow(ThreadCounters& t, std::int64_t delta) noexcept;

// The hooks' fast path: a thread-local add and one unsigned comparison that folds "unregistered",
// "batch full" and "large block" together: a block of kExactBytes overflows any batch limit
// (limits are at most kMaxBatchBytes), so it always reaches the slow path.
inline void counters_heap_add(std::int64_t bytes) noexcept {
  ThreadCounters& t = tls_counters;
  const std::int64_t d = t.heap_delta + bytes;
  // |d| < batch_limit  <=>  (d + limit) in [0, 2*limit) as unsigned.
  if (__builtin_expect(static_cast<std::uint64_t>(d + t.batch_limit) <
                           static_cast<std::uint64_t>(2 * t.batch_limit),
                       1)) {
    t.heap_delta = d;
    return;
  }
  counters_heap_flush_slow(t, d);
}

// Mapped bytes change rarely and always by whole pages: straight to the global block.
void counters_mmap_add(std::int64_t bytes) noexcept;

// Flushes the calling thread's delta (before fork, at exit, when a thread ends).
void counters_flush_thread() noexcept;
// The batch new threads get (clamped to [0, kMaxBatchBytes]); set once at start-up.
void counters_set_batch(std::int64_t bytes) noexcept;
std::int64_t counters_batch() noexcept;
// The worst-case error of every heap figure now: threads_peak x batch.
std::int64_t counters_error_bound() noexcept;

// Device memory (the CUDA hooks): per device index, exact, no batching.
void counters_device_add(int device, std::int64_t bytes) noexcept;
void counters_pinned_add(std::int64_t bytes) noexcept;
void counters_managed_add(std::int64_t bytes) noexcept;

// In a forked child, once it counts into its own block: the only thread is the one that forked.
void counters_after_fork_child() noexcept;

// ---- the job (job.hpp) -------------------------------------------------------------------

// What this process shares with its job: the job's block, this process's running contribution
// to it (its slot's), and its live figures when it joined, which it never adds to the job (a
// forked child's inherited heap is its parent's).
struct JobShare {
  CounterBlock* job;
  protocol::JobContribution* mine;
  CounterSnapshot base;
};

// From now on every change of a live figure also changes the job's by as much as this process's
// contribution max(0, live - base) changes; adds what it holds beyond `base` now. Null: stop
// sharing (what was shared stays until taken back with counters_withdraw).
void counters_share_with_job(JobShare* share) noexcept;
// Takes a contribution (of this process, an earlier image of it, or a process that is gone) out
// of the job's live figures; safe to repeat, each byte is taken once.
void counters_withdraw(CounterBlock& job, protocol::JobContribution& c) noexcept;

}  // namespace memwatch::shim
