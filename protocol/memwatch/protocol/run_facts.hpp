// What shim and daemon agree a run is, besides its figures: how many devices it may count, what
// a predicted OOM does, and how it ended. One definition each; the wire carries them as bytes.
#pragma once

#include <cstdint>

namespace memwatch::protocol {

// Device slots: the counters' per-device arrays, a HELLO's capacities and a BYE's device peaks.
inline constexpr int kMaxDevices = 16;

// MEMWATCH_ON_OOM: what the shim does when the verdict says the run will not fit.
enum class OnOom : std::uint8_t { warn = 0, abort = 1, off = 2 };

// How a run ended: the report's exit.cause, a BYE's cause, the store's exit_cause.
enum class ExitCause : std::uint8_t { exit = 0, underscore_exit = 1, signal = 2, killed = 3 };

constexpr const char* exit_cause_name(ExitCause cause) noexcept {
  switch (cause) {
    case ExitCause::exit:
      return "exit";
    case ExitCause::underscore_exit:
      return "_exit";
    case ExitCause::signal:
      return "signal";
    case ExitCause::killed:
      return "killed";
  }
  return "exit";
}

}  // namespace memwatch::protocol
