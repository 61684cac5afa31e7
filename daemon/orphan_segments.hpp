// The shared-memory segments no one will read: a process killed by a signal leaves its counters
// (memwatch.<pid>) and its job's (memwatch.job.<pid>) in /dev/shm for the daemon, which reads and
// removes those of the runs it stores within a second; the rest (a job's members, runs with no
// daemon, runs of a daemon that is gone) would stay until the machine restarts, hundreds a day
// on a busy node.
#pragma once

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>

#include "gone_processes.hpp"

namespace memwatch::daemon {

class OrphanSweep {
 public:
  explicit OrphanSweep(std::filesystem::path dir = "/dev/shm") : dir_(std::move(dir)) {}

  // Removes this user's segments whose process was gone at the previous sweep too (another
  // daemon on this host reads its own killed runs' within a second of the death: a minute
  // later, no one will), but for the pids in `keep` (the runs still running in the store).
  // Returns how many.
  std::size_t sweep(const std::set<int>& keep);

 private:
  std::filesystem::path dir_;
  SeenTwice<std::string> gone_;
};

}  // namespace memwatch::daemon
