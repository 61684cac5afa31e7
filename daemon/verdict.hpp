// Judging a run before it allocates: its predicted peak and upper bound against its capacity,
// and the largest value of one parameter whose upper bound still fits.
#pragma once

#include <optional>
#include <string>

#include "memwatch/model/model.hpp"
#include "memwatch/protocol/wire.hpp"

namespace memwatch::daemon {

// The largest value of `vary` (a whole number, as batch sizes and edges are) whose upper bound
// fits `capacity_bytes`, the other parameters as in `base`; 0 when not even 1 fits. Searches
// upward from `base`'s value while it fits, then bisects, so a monotone model answers exactly.
double largest_fitting(const model::Model& m, model::Point base, const std::string& vary,
                       double capacity_bytes);

// The verdict on a HELLO: over capacity when the upper bound exceeds it; `vary` is the first
// parameter of the run.
protocol::Verdict judge(const model::Model& m, const protocol::Hello& hello);

model::Point point_of(const protocol::Params& params);
// "target = formula" of the part of the model that answers for `p`.
std::string formula_of(const model::Model& m, const model::Point& p);

}  // namespace memwatch::daemon
