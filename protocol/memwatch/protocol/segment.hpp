// The per-process shared-memory segment that holds a shim's CounterBlock (Boost.Interprocess),
// named memwatch.<pid> (/dev/shm/memwatch.<pid>). It outlives a SIGKILLed process, so a watcher
// (the daemon) can still read the last live and peak values; a clean exit removes it. The shim
// creates it (interposer/segment.*); anyone may read or remove it here.
#pragma once

#include <optional>
#include <string>

#include "memwatch/protocol/counter_block.hpp"

namespace memwatch::protocol {

std::string segment_name(int pid);
void segment_remove(int pid) noexcept;
// A watcher's copy of a process's counters, if its segment exists and is memwatch's (this
// layout's magic and version).
std::optional<CounterSnapshot> segment_read(int pid) noexcept;

}  // namespace memwatch::protocol
