// The shim's side of its shared-memory segments (memwatch/protocol/segment.hpp): it creates the
// process's segment and counts into it, and creates or opens its job's; reading and removing them
// are the protocol's, shared with watchers.
#pragma once

#include <cstddef>
#include <string>

#include "counting/counters.hpp"
#include "memwatch/protocol/segment.hpp"

namespace memwatch::shim {

using protocol::job_segment_name;
using protocol::job_segment_remove;
using protocol::segment_name;
using protocol::segment_read;
using protocol::segment_remove;

// Creates (or re-creates) the segment of `pid` and returns its mapped block; never unmapped,
// since hooks may count into it until the process is gone. nullptr on failure.
CounterBlock* segment_create(int pid) noexcept;

// A new zeroed segment `name` of `size` bytes (replacing a stale one), or an existing one of at
// least `size` bytes, mapped for the rest of the process's life. nullptr on failure. Call inside
// an InternalScope: the mapping's bookkeeping is the shim's.
void* segment_create_named(const std::string& name, std::size_t size) noexcept;
void* segment_open_named(const std::string& name, std::size_t size) noexcept;

}  // namespace memwatch::shim
