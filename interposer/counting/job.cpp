#include "counting/job.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "counting/proc_stats.hpp"
#include "counting/segment.hpp"

namespace memwatch::shim {

namespace {

using protocol::JobContribution;
using protocol::JobSlot;
using protocol::JoinedBy;
using protocol::kMaxJobSlots;

JobBlock* g_block = nullptr;
JobSlot* g_slot = nullptr;   // null when every slot was taken: counted, but not listed
JobContribution g_unlisted;  // this process's contribution when it has no slot
JobShare g_share{};
JobRole g_role = JobRole::none;

void copy_name(char (&to)[sizeof(JobSlot::name)], const char* from) {
  std::strncpy(to, from, sizeof to - 1);
  to[sizeof to - 1] = '\0';
}

JobSlot* claim_slot() {
  const int i = g_block->slots_used.fetch_add(1, std::memory_order_relaxed);
  return i < kMaxJobSlots ? &g_block->slots[i] : nullptr;
}

// This pid's slot from before its exec (a forked member, or the root), still counted as running.
JobSlot* earlier_image_slot(int pid) {
  const int used = g_block->slots_used.load(std::memory_order_relaxed);
  for (int i = 0; i < used && i < kMaxJobSlots; ++i) {
    JobSlot& slot = g_block->slots[i];
    if (slot.pid.load(std::memory_order_acquire) == pid &&
        slot.state.load(std::memory_order_relaxed) ==
            static_cast<std::uint8_t>(MemberState::running))
      return &slot;
  }
  return nullptr;
}

// Fills `slot` (the pid last, so that a reader never sees a half-made slot) and starts sharing
// what this process holds beyond `base` with the job.
void join(JobSlot* slot, JoinedBy how, const char* name, const CounterSnapshot& base) {
  if (slot != nullptr) {
    slot->parent = getppid();
    slot->joined_by = how;
    copy_name(slot->name, name);
    slot->inherited_bytes = base.heap_live + base.mmap_live;
    slot->host_peak.store(0, std::memory_order_relaxed);
    slot->device_peak.store(0, std::memory_order_relaxed);
    slot->state.store(static_cast<std::uint8_t>(MemberState::running), std::memory_order_relaxed);
    slot->pid.store(getpid(), std::memory_order_release);
  }
  g_slot = slot;
  g_share = JobShare{&g_block->counters, slot != nullptr ? &slot->contribution : &g_unlisted, base};
  counters_share_with_job(&g_share);
}

void start_root(const char* name) {
  const int pid = getpid();
  void* memory = segment_create_named(job_segment_name(pid), sizeof(JobBlock));
  if (memory == nullptr) return;
  g_block = new (memory) JobBlock{};
  g_block->magic = JobBlock::kMagic;
  g_block->version = JobBlock::kBlockVersion;
  g_block->root_pid = pid;
  CounterBlock& c = g_block->counters;
  c.magic = CounterBlock::kMagic;
  c.version = CounterBlock::kBlockVersion;
  c.pid = pid;
  c.start_unix_s = proc_unix_s();
  c.processes.store(1, std::memory_order_relaxed);
  // For everything the root starts: an exec'd program finds its job here.
  char digits[16];
  std::snprintf(digits, sizeof digits, "%d", pid);
  setenv("MEMWATCH_JOB", digits, 1);
  g_role = JobRole::root;
  join(claim_slot(), JoinedBy::root, name, CounterSnapshot{});
}

JobBlock* open_job(int root_pid) {
  auto* block =
      static_cast<JobBlock*>(segment_open_named(job_segment_name(root_pid), sizeof(JobBlock)));
  if (block == nullptr || block->magic != JobBlock::kMagic ||
      block->version != JobBlock::kBlockVersion || block->root_pid != root_pid)
    return nullptr;
  return block;
}

// A process that is gone, or a zombie whose memory the kernel already took back.
bool process_gone(int pid) {
  const int saved = errno;
  bool gone = kill(pid, 0) != 0 && errno == ESRCH;
  if (!gone) {
    // The path by hand: this also runs in the root's fatal-signal handler.
    char path[32] = "/proc/", digits[12], stat[512];
    int n = 0, at = 6;
    for (int v = pid; v > 0 && n < 11; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
    while (n > 0) path[at++] = digits[--n];
    std::memcpy(path + at, "/stat", 6);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      const ssize_t got = read(fd, stat, sizeof stat - 1);
      close(fd);
      stat[got > 0 ? got : 0] = '\0';
      // "pid (comm) S ...": the state follows the last ')', which a comm may contain.
      const char* end = std::strrchr(stat, ')');
      gone = end != nullptr && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
    }
  }
  errno = saved;
  return gone;
}

void reap_members() {
  const int self = getpid();
  const int used = g_block->slots_used.load(std::memory_order_relaxed);
  for (int i = 0; i < used && i < kMaxJobSlots; ++i) {
    JobSlot& slot = g_block->slots[i];
    const int pid = slot.pid.load(std::memory_order_acquire);
    if (pid == 0 || pid == self || !process_gone(pid)) continue;
    counters_withdraw(g_block->counters, slot.contribution);
    std::uint8_t running = static_cast<std::uint8_t>(MemberState::running);
    slot.state.compare_exchange_strong(running, static_cast<std::uint8_t>(MemberState::gone));
  }
}

}  // namespace

void job_start(int root_pid, const char* name) noexcept {
  const int pid = getpid();
  g_block = root_pid > 0 ? open_job(root_pid) : nullptr;
  if (g_block == nullptr) return start_root(name);  // none to join, or a stale MEMWATCH_JOB
  g_role = root_pid == pid ? JobRole::root : JobRole::member;
  const JoinedBy how = g_role == JobRole::root ? JoinedBy::root : JoinedBy::exec;
  // After an exec the earlier image's memory is gone with it: its contribution goes, its slot
  // is this image's. A process spawned without fork's handlers (vfork, posix_spawn) is new.
  if (JobSlot* earlier = earlier_image_slot(pid)) {
    counters_withdraw(g_block->counters, earlier->contribution);
    return join(earlier, how, name, CounterSnapshot{});
  }
  g_block->counters.processes.fetch_add(1, std::memory_order_relaxed);
  join(claim_slot(), how, name, CounterSnapshot{});
}

void job_after_fork_child() noexcept {
  if (g_block == nullptr) return;
  counters_share_with_job(nullptr);  // the share and the slot are the parent's
  g_role = JobRole::member;
  g_block->counters.processes.fetch_add(1, std::memory_order_relaxed);
  // What the child inherited is its parent's in the job; its thread is its own.
  CounterSnapshot base = counters_snapshot(counters_block());
  base.threads_live = 0;
  join(claim_slot(), JoinedBy::fork, g_slot != nullptr ? g_slot->name : "", base);
}

void job_sample() noexcept {
  if (g_block == nullptr) return;
  if (g_slot != nullptr) {
    const CounterSnapshot own = counters_snapshot(counters_block());
    g_slot->host_peak.store(own.host_peak, std::memory_order_relaxed);
    g_slot->device_peak.store(own.device_sum_peak, std::memory_order_relaxed);
  }
  if (g_role == JobRole::root) reap_members();
}

void job_leave(const CounterSnapshot& own, MemberState how) noexcept {
  if (g_block == nullptr) return;
  counters_share_with_job(nullptr);
  if (g_slot != nullptr) {
    g_slot->host_peak.store(own.host_peak, std::memory_order_relaxed);
    g_slot->device_peak.store(own.device_sum_peak, std::memory_order_relaxed);
    g_slot->state.store(static_cast<std::uint8_t>(how), std::memory_order_release);
  }
  counters_withdraw(g_block->counters, g_slot != nullptr ? g_slot->contribution : g_unlisted);
}

void job_close() noexcept {
  if (g_role == JobRole::root) job_segment_remove(g_block->root_pid);
}

JobRole job_role() noexcept {
  return g_role;
}

const JobBlock* job_block() noexcept {
  return g_block;
}

}  // namespace memwatch::shim
