// How large the model's leave-one-out errors are near a point. Memory errors are not one size
// everywhere: a 16^3 volume or a batch of 1 misses by 10-30% where a 96^3 volume misses by 0.5%,
// so one relative width for all points is either too narrow for the small runs or four times
// too wide for the large ones. The scale is the root mean square leave-one-out error of the
// nearest runs, in log-parameter space (memory grows by powers: 16 -> 32 is as far as 48 -> 96).
//
// A neighbour's error is carried to the point at the size it has there. Where a program's
// misses are bytes of its own (the allocator's rounding, a phase of a few MiB) they are the
// same bytes at 150 MiB and at 7 GiB, a 2% error at one and 0.05% at the other; where they
// are a share of the peak (cuDNN's workspace, a block size of the caching allocator) they
// keep their share. How errors shrink with the peak is read from the runs: |error| goes as
// peak^-power, power in 0..1 (the U-net sweeps' formulas: 0.35 on LibTorch's host heap, 0.33
// on PyTorch's, 0 on CUDA's device memory, where cuDNN's workspaces jag by a share).
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
  double floor = 0;  // no scale below this (a few exact neighbours), carried by size as errors are
  // The batch parameter (SIZE_MAX: none): a run at batch 1 is a neighbour of a point from batch
  // 2 on, and the reverse, only after every run on the point's own side.
  std::size_t apart = SIZE_MAX;
  std::vector<double> sizes;  // each run's measured peak
  double size_power = 0;      // |error| ~ peak^-size_power; 0: errors carried as they are

  [[nodiscard]] bool empty() const { return points.empty(); }
  // The scale at `x`, whose peak is `size` (a prediction); `skip` leaves one run out (a run's
  // own error is not its neighbours').
  [[nodiscard]] double at(std::span<const double> x, double size,
                          std::size_t skip = SIZE_MAX) const;

 private:
  // Run i's error as a share of a peak of `size`.
  [[nodiscard]] double carried(std::size_t i, double size) const;
  // The floor at a peak of `size`: a twentieth of the runs' mean error carried there.
  [[nodiscard]] double floor_at(double size) const;
};

// How the errors shrink as the peak grows: minus the least-squares slope of ln|error| against
// ln(peak) within each of the runs' `sides` (batch 1, batches from 2 on), taken two standard
// errors toward 0 and held to 0..1; 0 where fewer than 6 runs have an error or no side's peaks
// span 2x.
[[nodiscard]] double size_power_of(std::span<const double> errors, std::span<const double> sizes,
                                   std::span<const std::size_t> sides);

// A neighbourhood of max(4, sqrt(n) / 2) runs: on the U-net sweep's 82-run splits, 5 neighbours
// give a median headroom of 5.7% at 97.6% coverage, 9 give 8.5%, 18 give 13.8% (the
// neighbourhood reaches across regimes); the floor is a twentieth of the mean error, so no
// neighbourhood claims more than 20x precision. Errors are carried by `size_power`.
[[nodiscard]] LocalScale make_local_scale(std::vector<std::vector<double>> points,
                                          std::vector<double> errors, std::vector<double> sizes,
                                          double size_power, std::size_t apart = SIZE_MAX);

// The scale of a fit's leave-one-out `ratios` (loo_ratios, one per run of `d`) over d's runs,
// its size power read from them (size_power_of, each side of `apart` on its own).
[[nodiscard]] LocalScale local_scale_of(const Dataset& d, std::span<const double> ratios,
                                        std::size_t apart = SIZE_MAX);

}  // namespace memwatch::model
