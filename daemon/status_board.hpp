// The loop's live figures, posted once per loop turn and read by the query thread: a status
// query never touches the loop's own counters or the store.
#pragma once

#include <cstdint>
#include <mutex>

#include "store.hpp"

namespace memwatch::daemon {

struct IngestStats {
  std::uint64_t frames = 0;
  std::uint64_t rejected = 0;  // not a message of ours
  std::uint64_t warnings = 0;
};

struct LiveFigures {
  Counts totals;
  IngestStats ingest;
  std::uint64_t refused_clients = 0;  // CURVE handshakes refused
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
