// Runs of one configuration at other batch sizes, and what they say about the model's miss at
// this one. For fixed other parameters memory is affine in the batch from batch 2 on (on the
// reference sweep the slopes agree to 0.1% over batch 2-8), and so is every formula the priors
// allow; the model's miss along one configuration is then a line in the batch too. Where a
// formula misses a configuration by its own offset (an allocator's rounding, a kernel's
// workspace at a 16^3 volume), the line through the misses of its measured batches corrects the
// prediction at every other batch, as a line through the measured peaks would (AutoBatch's
// probe), with the formula still carrying the law between configurations. Batch 1 takes
// another path on CPU (LibTorch's slow_conv3d): its runs correct batch 1 only, and the runs from
// batch 2 on only each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memwatch/model/dataset.hpp"

namespace memwatch::model {

struct BatchSlices {
  std::size_t param = SIZE_MAX;             // the batch parameter; SIZE_MAX: no correction
  std::vector<std::vector<double>> points;  // the training runs' parameters
  std::vector<double> measured;             // and their measured values

  [[nodiscard]] bool empty() const { return param == SIZE_MAX || points.empty(); }
  // The training runs equal to x in every parameter but the batch, at a batch of x's regime
  // (1, or 2 on), but `skip`.
  [[nodiscard]] std::vector<std::size_t> peers_of(std::span<const double> x,
                                                  std::size_t skip = SIZE_MAX) const;
};

// One peer: its batch, and the model's miss there (measured - predicted) and prediction.
struct Miss {
  double batch = 0;
  double miss = 0;
  double predicted = 0;
};

// How peers correct a prediction: not at all, by their relative miss carried over (one batch),
// or by the line through their misses (two batches or more). The kinds differ in precision, and
// each has its own scores in the bound.
enum class Correction { none, carried, line };
[[nodiscard]] Correction correction_kind(std::span<const Miss> misses);

// The correction to add to `predicted`, the model's value at `batch`: the least-squares line
// through the misses where they hold two batches or more; their mean relative miss, scaled to
// `predicted`, where they hold one; 0 without misses.
[[nodiscard]] double correction(std::span<const Miss> misses, double batch, double predicted);

// The slices of `d`'s runs along `batch_param` (SIZE_MAX or out of range: none).
[[nodiscard]] BatchSlices make_batch_slices(const Dataset& d, std::size_t batch_param);

}  // namespace memwatch::model
