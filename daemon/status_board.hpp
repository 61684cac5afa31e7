// What the loop posts for other threads to read: its live figures, once per turn, for the query
// thread (a status query never touches the loop's own counters or the store), and the metrics'
// snapshot for the metrics thread.
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
  StoreHealth store;
};

// The latest value one thread posted, for others to copy.
template <class Value>
class Board {
 public:
  void post(Value value) {
    const std::lock_guard lock(mutex_);
    value_ = std::move(value);
  }
  [[nodiscard]] Value read() const {
    const std::lock_guard lock(mutex_);
    return value_;
  }

 private:
  mutable std::mutex mutex_;
  Value value_;
};

}  // namespace memwatch::daemon
