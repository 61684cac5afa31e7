// Processes found gone, and the rule both the liveness check and the segment sweep judge them
// by: gone at two consecutive checks. A process found gone once may still have its last words on
// the way (a BYE queued behind a backlog; its counters, which the daemon beside it reads first).
#pragma once

#include <signal.h>

#include <cerrno>
#include <cstdint>
#include <set>
#include <utility>

namespace memwatch::daemon {

inline bool process_gone(std::int64_t pid) {
  return pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Keys seen in two consecutive rounds of a check.
template <class Key>
class SeenTwice {
 public:
  // Whether `key` was seen in the previous round too; it counts as seen in this one either way.
  bool again(const Key& key) {
    now_.insert(key);
    return before_.contains(key);
  }
  // Ends a round: the keys seen in it are those the next round compares with.
  void next_round() { before_ = std::exchange(now_, {}); }

 private:
  std::set<Key> before_, now_;
};

}  // namespace memwatch::daemon
