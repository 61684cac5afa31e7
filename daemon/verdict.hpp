// Judging a run before it allocates: its predicted peak and upper bound against its capacity,
// and the largest value of one parameter whose upper bound still fits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "memwatch/model/model.hpp"
#include "memwatch/protocol/wire.hpp"
#include "models.hpp"

namespace memwatch::daemon {

// The largest value of `vary` (a whole number, as batch sizes and edges are) whose upper bound
// fits `capacity_bytes` there and at every smaller value, the other parameters as in `base`; 0
// when not even 1 fits. The modeler's search (model::largest_fitting), as `memwatch max` uses.
double largest_value_that_fits(const model::Model& m, model::Point base, const std::string& vary,
                               double capacity_bytes);

// The verdict of one model on a HELLO: over capacity when the upper bound exceeds
// `capacity_bytes` (0: unknown, never over); `vary` is the first parameter of the run.
protocol::Verdict judge(const model::Model& m, const protocol::Hello& hello, double capacity_bytes);

// The sum of the device capacities a HELLO names; 0 when it names none.
std::int64_t device_capacity_of(const protocol::Hello& hello);

// The verdict on a HELLO from the workload's latest models: the host model against the host
// capacity, the device model against the sum of the device capacities the HELLO names (the
// model predicts the sum of the devices' peaks). The over-capacity one when either is over,
// the device's first; else the host's, or the device's when only that model exists. `target`
// names the model judged; no_model when neither applies.
protocol::Verdict judge_run(const ModelCache& models, const protocol::Hello& hello);

model::Point point_of(const protocol::Params& params);
// "target = formula" of the part of the model that answers for `p`.
std::string formula_of(const model::Model& m, const model::Point& p);

}  // namespace memwatch::daemon
