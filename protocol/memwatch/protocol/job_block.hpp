// A job's shared counters: every process of one job (the process tree under one `memwatch run`,
// one sweep row, or the first shimmed process) counts into its job's block as well as its own, so
// that the job's peak is the peak of the simultaneous sum, exact, not a sum of peaks.
//
// A process adds to the job only what it holds beyond what it inherited: a forked child's
// contribution to each live figure is max(0, live - live at fork), so the parent's heap, which the
// child's own figures rightly include, counts once in the job. Each process keeps its running
// contribution in its slot, so that whoever replaces it (its exec'd image) or outlives it (the
// root, for a member that was killed) can take it back out of the job.
//
// The block lives in the segment memwatch.job.<root pid> (segment.hpp); processes find it through
// MEMWATCH_JOB=<root pid> in the environment, which the root sets for its descendants.
#pragma once

#include <atomic>
#include <cstdint>

#include "memwatch/protocol/counter_block.hpp"

namespace memwatch::protocol {

// The processes a job lists one by one in its report; more still count, unnamed.
inline constexpr int kMaxJobSlots = 128;

enum class JoinedBy : std::uint8_t { root = 0, fork = 1, exec = 2 };
enum class MemberState : std::uint8_t { running = 0, exited = 1, gone = 2 };

constexpr const char* joined_by_name(JoinedBy how) noexcept {
  switch (how) {
    case JoinedBy::root:
      return "root";
    case JoinedBy::fork:
      return "fork";
    case JoinedBy::exec:
      return "exec";
  }
  return "root";
}

constexpr const char* member_state_name(MemberState state) noexcept {
  switch (state) {
    case MemberState::running:
      return "running";
    case MemberState::exited:
      return "exited";
    case MemberState::gone:
      return "gone";  // ended without saying so (SIGKILL, the OOM killer)
  }
  return "running";
}

// What one process adds to each live figure of its job now.
struct JobContribution {
  std::atomic<std::int64_t> heap, mmap, pinned, managed, threads;
  std::atomic<std::int64_t> device[kMaxDevices];
};

struct JobSlot {
  std::atomic<std::int32_t> pid;  // 0: free
  std::int32_t parent;
  std::atomic<std::uint8_t> state;  // MemberState
  JoinedBy joined_by;
  char name[46];                 // the program's name, as a workload is named
  std::int64_t inherited_bytes;  // heap and mapped bytes it had at fork
  // Its own figures, as its report has them; updated at each sample and at its end.
  std::atomic<std::int64_t> host_peak, device_peak;
  JobContribution contribution;
};

struct JobBlock {
  static constexpr std::uint64_t kMagic = 0x31626f6a77656d6dULL;  // "mmewjob1"
  static constexpr std::uint32_t kBlockVersion = 1;

  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t root_pid;
  CounterBlock counters;  // the job's figures, as a process's block holds its own
  std::atomic<std::int32_t> slots_used;
  JobSlot slots[kMaxJobSlots];
};

}  // namespace memwatch::protocol
