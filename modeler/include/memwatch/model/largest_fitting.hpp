// The largest value of one parameter whose upper bound (not the prediction) fits a capacity:
// what `memwatch max` and the daemon's "largest value that fits" answer.
#pragma once

#include <string>

#include "memwatch/model/model.hpp"

namespace memwatch::model {

struct FitSearch {
  double step = 1;     // the parameter's values are step, 2 step, 3 step, ...
  double limit = 1e7;  // no parameter of a training run goes past this
  // Up to this many steps every value below the answer is checked, so a bound that dips and
  // rises again (at a regime's edge, where the runner-ups start widening it) cannot let an
  // answer through that a smaller value already failed; above it the search trusts bisection.
  double exhaustive_steps = 1 << 14;
};

struct Fitting {
  double value = 0;  // 0: not even one step fits
  Prediction at;     // the prediction and bound at `value` (zeros when value is 0)
};

// The largest v on the step grid such that the upper bound at v and at every grid value below it
// fits `capacity`, the other parameters as in `base`. Throws std::invalid_argument as
// Model::predict does (a missing or unknown parameter, labels with no model), and for a step
// or capacity that is not positive.
[[nodiscard]] Fitting largest_fitting(const Model& m, Point base, const std::string& vary,
                                      double capacity, const FitSearch& search = {});

}  // namespace memwatch::model
