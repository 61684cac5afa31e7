// The shim's counters as other processes see them: the block in its shared-memory segment
// (segment.hpp), and a plain copy of it. The shim writes the block
// (interposer/counting/counters.*); a watcher (the daemon, after SIGKILL) only reads it, so the
// layout is a contract between processes, versioned by kBlockVersion.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "memwatch/protocol/figures.hpp"
#include "memwatch/protocol/run_facts.hpp"

namespace memwatch::protocol {

// Every field is an address-free lock-free atomic. The hooks' fields are grouped by cache line:
// live values, peaks, then the device's. A figure of source `counter` (figures.hpp) has its
// field here under its id.
struct CounterBlock {
  static constexpr std::uint64_t kMagic = 0x3174617777656d6dULL;  // "mmewwat1"
  static constexpr std::uint32_t kBlockVersion = 2;

  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t pid;
  double start_unix_s;

  alignas(64) std::atomic<std::int64_t> heap_live;
  std::atomic<std::int64_t> mmap_live;
  std::atomic<std::int64_t> host_live;  // heap + mmap, updated with them: its peak is exact
  alignas(64) std::atomic<std::int64_t> heap_peak;
  std::atomic<std::int64_t> mmap_peak;
  std::atomic<std::int64_t> host_peak;
  std::atomic<std::int64_t> threads_live;
  std::atomic<std::int64_t> threads_peak;

  alignas(64) std::atomic<std::int64_t> device_live[kMaxDevices];
  std::atomic<std::int64_t> device_peak[kMaxDevices];
  std::atomic<std::int64_t> device_sum_live;
  std::atomic<std::int64_t> device_sum_peak;
  std::atomic<std::int64_t> pinned_live;
  std::atomic<std::int64_t> pinned_peak;
  std::atomic<std::int64_t> managed_live;
  std::atomic<std::int64_t> managed_peak;
  // 1 in a process's own block; in its job's (job_block.hpp), every process that took part.
  std::atomic<std::int64_t> processes;

  // 0 while the process runs, 1 once it exited cleanly (a watcher that finds 0 and no process
  // knows the process was killed).
  std::atomic<std::uint32_t> exited;
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free);

// A plain copy of a block, for reports and watchers: every figure under its id (those of source
// `process` are 0 until their reader fills them in), and each device's own values.
struct CounterSnapshot {
#define MEMWATCH_FIGURE_SNAPSHOT_MEMBER(id, ...) std::int64_t id;
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_SNAPSHOT_MEMBER)
#undef MEMWATCH_FIGURE_SNAPSHOT_MEMBER
  std::int64_t device_live[kMaxDevices], device_peak[kMaxDevices];
  std::int32_t pid;
  bool exited;
};

// Reads every counter of `b`; allocation-free, so a signal handler may call it.
inline CounterSnapshot counters_snapshot(const CounterBlock& b) noexcept {
  CounterSnapshot s{};
  auto get = [](const std::atomic<std::int64_t>& a) { return a.load(std::memory_order_relaxed); };
#define MEMWATCH_FIGURE_READ(id, name, kind, stat, follows, source, ...) \
  MEMWATCH_FIGURE_IF_##source(s.id = get(b.id);)
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_READ)
#undef MEMWATCH_FIGURE_READ
  for (int i = 0; i < kMaxDevices; ++i) {
    s.device_live[i] = get(b.device_live[i]);
    s.device_peak[i] = get(b.device_peak[i]);
  }
  s.pid = b.pid;
  s.exited = b.exited.load(std::memory_order_relaxed) != 0;
  return s;
}

// Stores `s` into `block`'s counters. A peak restarts from the live value it follows unless
// `keep_peaks` (a forked child starts its own peaks from what it inherited).
inline void counters_store(CounterBlock& block, const CounterSnapshot& s,
                           bool keep_peaks) noexcept {
  auto set = [](std::atomic<std::int64_t>& a, std::int64_t v) {
    a.store(v, std::memory_order_relaxed);
  };
#define MEMWATCH_FIGURE_WRITE(id, name, kind, stat, follows, source, ...) \
  MEMWATCH_FIGURE_IF_##source(set(block.id, keep_peaks ? s.id : s.follows);)
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_WRITE)
#undef MEMWATCH_FIGURE_WRITE
  for (int i = 0; i < kMaxDevices; ++i) {
    set(block.device_live[i], s.device_live[i]);
    set(block.device_peak[i], keep_peaks ? s.device_peak[i] : s.device_live[i]);
  }
}

// The peak of each device a snapshot saw, up to the last device used (BYE's device peaks).
inline std::vector<std::int64_t> device_peaks_of(const CounterSnapshot& s) {
  std::vector<std::int64_t> peaks;
  for (int i = 0; i < kMaxDevices; ++i)
    if (s.device_peak[i] > 0) {
      peaks.resize(static_cast<std::size_t>(i) + 1, 0);
      peaks[static_cast<std::size_t>(i)] = s.device_peak[i];
    }
  return peaks;
}

}  // namespace memwatch::protocol
