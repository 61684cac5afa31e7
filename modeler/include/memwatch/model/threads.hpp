// How many threads a fit spreads its independent parts over (the cuts a regime search screens,
// the candidates and subsets a term search scores and refits). A fit's result does not depend on
// it: every part lands in its own slot and is joined in one order.
#pragma once

#include <cstddef>

namespace memwatch::model {

// The CPUs this process may run on (its affinity: a Slurm job's or a container's share).
[[nodiscard]] std::size_t usable_cpus();

// 0 (the default): usable_cpus(); 1: every fit on the calling thread.
void set_fit_threads(std::size_t threads);
[[nodiscard]] std::size_t fit_threads();

}  // namespace memwatch::model
