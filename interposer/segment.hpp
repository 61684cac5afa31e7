// The per-process shared-memory segment that holds the counters (Boost.Interprocess), named
// memwatch.<pid> (/dev/shm/memwatch.<pid>). It outlives a SIGKILLed process, so a watcher (the
// daemon) can still read the last live and peak values; a clean exit removes it.
#pragma once

#include <optional>
#include <string>

#include "counters.hpp"

namespace memwatch::shim {

std::string segment_name(int pid);
// Creates (or re-creates) the segment of `pid` and returns its mapped block; never unmapped,
// since hooks may count into it until the process is gone. nullptr on failure.
CounterBlock* segment_create(int pid) noexcept;
void segment_remove(int pid) noexcept;
// A watcher's copy of a process's counters, if its segment exists and is memwatch's.
std::optional<CounterSnapshot> segment_read(int pid) noexcept;

}  // namespace memwatch::shim
