// The shared-memory segments (Boost.Interprocess) that hold a shim's counters: each process's
// CounterBlock in memwatch.<pid>, and its job's JobBlock (job_block.hpp) in memwatch.job.<root
// pid> (/dev/shm/...). They outlive a SIGKILLed process, so a watcher (the daemon) can still read
// the last live and peak values; a clean exit removes them. The shim creates them
// (interposer/counting/segment.*); anyone may read or remove them here.
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

std::string job_segment_name(int root_pid);
void job_segment_remove(int root_pid) noexcept;
// The job's counters, if the job of `root_pid` has a segment of this layout.
std::optional<CounterSnapshot> job_segment_read(int root_pid) noexcept;

}  // namespace memwatch::protocol
