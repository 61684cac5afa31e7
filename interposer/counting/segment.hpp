// The shim's side of its shared-memory segment (memwatch/protocol/segment.hpp): it creates the
// segment and counts into it; reading and removing it are the protocol's, shared with watchers.
#pragma once

#include "counting/counters.hpp"
#include "memwatch/protocol/segment.hpp"

namespace memwatch::shim {

using protocol::segment_name;
using protocol::segment_read;
using protocol::segment_remove;

// Creates (or re-creates) the segment of `pid` and returns its mapped block; never unmapped,
// since hooks may count into it until the process is gone. nullptr on failure.
CounterBlock* segment_create(int pid) noexcept;

}  // namespace memwatch::shim
