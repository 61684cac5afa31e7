// The loop's live figures, posted once per loop turn and read by the query thread: a status
// query never touches the loop's own counters or the store.
#pragma once

#include <cstdint>
#include <mutex>

namespace memwatch::daemon {

struct LiveFigures {
  std::int64_t runs = 0;
  std::int64_t running = 0;
  std::int64_t samples = 0;
  std::int64_t workloads = 0;
  std::uint64_t frames = 0;
  std::uint64_t warnings = 0;
  std::uint64_t rejected_frames = 0;
  std::uint64_t refused_clients = 0;
};

class StatusBoard {
 public:
  void post(const LiveFigures& figures) {
    const std::lock_guard lock(mutex_);
    figures_ = figures;
  }
  [[nodiscard]] LiveFigures read() const {
    const std::lock_guard lock(mutex_);
    return figures_;
  }

 private:
  mutable std::mutex mutex_;
  LiveFigures figures_;
};

}  // namespace memwatch::daemon
