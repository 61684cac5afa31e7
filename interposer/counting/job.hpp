// The job this process is part of: the process tree started by the first shimmed process (one
// `memwatch run`, one sweep row). Its processes count into the job's shared block
// (memwatch/protocol/job_block.hpp) as well as their own, so the job's figures are exact sums at
// each moment; the root reports them and is the one run the daemon hears of.
//
// How a process finds its job: a forked child inherits its parent's; an exec'd program reads
// MEMWATCH_JOB (the root's pid), which the root put in its environment for everything it starts.
#pragma once

#include "counting/counters.hpp"

namespace memwatch::shim {

using protocol::JobBlock;
using protocol::MemberState;

enum class JobRole { none, root, member };

// At start-up, once the process counts into its own segment: joins the job of `root_pid` (from
// MEMWATCH_JOB; 0: none), taking over the slot of this pid's earlier image after an exec, or
// starts a job rooted here when there is none to join. `name` is the program's own name.
void job_start(int root_pid, const char* name) noexcept;
// In a forked child, once it counts into its own segment: joins the parent's job with what it
// inherited as its base.
void job_after_fork_child() noexcept;
// Each sample: this process's own peaks into its slot; the root also takes back the
// contributions of members that ended without saying so.
void job_sample() noexcept;
// At the process's end (clean, or a fatal signal): its own peaks into its slot, its contribution
// out of the job. Async-signal-safe.
void job_leave(const CounterSnapshot& own, MemberState how) noexcept;
// The root, at a clean end, after its report: the job's segment goes.
void job_close() noexcept;

JobRole job_role() noexcept;
// The job's block, or null when this process has no job (its segment could not be made).
const JobBlock* job_block() noexcept;

}  // namespace memwatch::shim
