// How large the model's leave-one-out errors are near a point. Memory errors are not one size
// everywhere: a 16^3 volume or a batch of 1 misses by 10-30% where a 96^3 volume misses by 0.5%,
// so one relative width for all points is either too narrow for the small runs or four times
// too wide for the large ones. The scale is the root mean square leave-one-out error of the
// nearest runs, in log-parameter space (memory grows by powers: 16 -> 32 is as far as 48 -> 96).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memwatch/model/dataset.hpp"

namespace memwatch::model {

struct LocalScale {
  std::vector<std::vector<double>> points;  // the training runs' parameters
  std::vector<double> errors;               // |leave-one-out relative error| of each run
  std::size_t neighbours = 0;               // how many runs make a neighbourhood
  double floor = 0;                         // no scale below this: a few exact neighbours
  // The batch parameter (SIZE_MAX: none): a run at batch 1 is a neighbour of a point from batch
  // 2 on, and the reverse, only after every run on the point's own side.
  std::size_t apart = SIZE_MAX;

  [[nodiscard]] bool empty() const { return points.empty(); }
  // The scale at `x`; `skip` leaves one run out (a run's own error is not its neighbours').
  [[nodiscard]] double at(std::span<const double> x, std::size_t skip = SIZE_MAX) const;
};

// A neighbourhood of max(4, sqrt(n) / 2) runs: on the U-net sweep's 82-run splits, 5 neighbours
// give a median headroom of 5.7% at 97.6% coverage, 9 give 8.5%, 18 give 13.8% (the
// neighbourhood reaches across regimes); the floor is a twentieth of the mean error, so no
// neighbourhood claims more than 20x precision.
[[nodiscard]] LocalScale make_local_scale(std::vector<std::vector<double>> points,
                                          std::vector<double> errors, std::size_t apart = SIZE_MAX);

// The scale of a fit's leave-one-out `ratios` (loo_ratios, one per run of `d`) over d's runs.
[[nodiscard]] LocalScale local_scale_of(const Dataset& d, std::span<const double> ratios,
                                        std::size_t apart = SIZE_MAX);

}  // namespace memwatch::model
