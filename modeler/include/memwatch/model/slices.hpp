// Runs that differ from a point in one parameter, and what they say about the model's miss
// there. A formula carries the law between configurations; it cannot carry what is a
// configuration's own (an allocator's rounding, a kernel's workspace at one volume), and a run
// that shares all but one parameter with the point often shares that too.
//
// Along the batch: for fixed other parameters memory is affine in the batch from batch 2 on (on
// the reference sweep the slopes agree to 0.1% over batch 2-8), and so is every formula the
// priors allow; the model's miss along one configuration is then a line in the batch, and the
// line through the misses of its measured batches corrects the prediction at every other batch,
// as a line through the measured peaks would (AutoBatch's probe). Batch 1 takes another path on
// CPU (LibTorch's slow_conv3d): its runs correct batch 1 only, and the runs from batch 2 on only
// each other. Along another parameter (the levels of a network whose weights the formula holds,
// at the same batch and volume) nothing says the miss is a line: the peers' relative miss is
// carried over.
//
// Last, a batch-1 point with no such peers (a volume run at no other depth) takes the relative
// miss of the two batch-1 runs nearest it in the memory the formula gives its batch (batch times
// the formula's slope in the batch: its activations). Batch 1's own offsets follow the size of
// the largest tensors more than any one parameter: the C++ U-net's batch-1 peaks lie 40% under
// to 22% over the line of its batches from 2 on, the Python one's 25% under to 15% over, and that
// ratio is one curve in filters x dim^3 (the first level's activations) across both filter
// counts. Not past the largest of those runs: there the extrapolation check widens the bound,
// and carrying the largest runs' miss up the C++ sweep's volumes missed its largest by 1.41%
// where the formula alone missed by 0.80%. Below the smallest, the fixed bytes the formula misses
// at the floor carry down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memwatch/model/dataset.hpp"
#include "memwatch/model/function.hpp"

namespace memwatch::model {

// x's peers along the first parameter of `Slices::along` it has any along: that parameter's
// position in `along` (`along.size()` where x has none) and the runs.
struct PeersAlong {
  std::size_t rank = SIZE_MAX;
  std::size_t param = SIZE_MAX;
  std::vector<std::size_t> runs;
};

// The entry of `Slices::along`, always the last, that stands for the runs nearest a point in
// the formula's activations, not for a parameter.
inline constexpr std::size_t kNearestActivations = SIZE_MAX - 1;

// The memory `f` gives the batch at x: x's batch times f's slope in it (f at batch 2 less f at
// batch 1). 0 without a batch parameter.
[[nodiscard]] double activations(const Function& f, std::span<const double> x, std::size_t batch);

struct Slices {
  std::vector<std::size_t> along;           // the parameters peers may differ in, first first
  std::size_t batch = SIZE_MAX;             // the batch parameter (a line, batch 1 apart)
  std::vector<std::vector<double>> points;  // the training runs' parameters
  std::vector<double> measured;             // and their measured values

  [[nodiscard]] bool empty() const { return along.empty() || points.empty(); }
  // The training runs equal to x in every parameter but `param` (its repeats among them), at a
  // batch of x's regime (1, or 2 on) where `param` is the batch, but `skip`.
  [[nodiscard]] std::vector<std::size_t> peers_of(std::span<const double> x, std::size_t param,
                                                  std::size_t skip = SIZE_MAX) const;
  // The batch-1 runs nearest x in `f`'s activations (two, ties to the earlier), but `skip`; none
  // where x is not at batch 1 or lies past all of them.
  [[nodiscard]] std::vector<std::size_t> nearest_in_activations(const Function& f,
                                                                std::span<const double> x,
                                                                std::size_t skip = SIZE_MAX) const;
  // `f` is the formula the slices correct (for kNearestActivations).
  [[nodiscard]] PeersAlong first_peers(const Function& f, std::span<const double> x,
                                       std::size_t skip = SIZE_MAX) const;
};

// One peer: its value along the parameter, and the model's miss there (measured - predicted)
// and prediction.
struct Miss {
  double at = 0;
  double miss = 0;
  double predicted = 0;
};

// How peers correct a prediction: not at all, by their relative miss carried over (one value,
// or a parameter memory is not affine in), or by the line through their misses (two batches or
// more). The kinds differ in precision, and each has its own scores in the bound.
enum class Correction { none, carried, line };
[[nodiscard]] Correction correction_kind(std::span<const Miss> misses, bool affine = true);

// The correction to add to `predicted`, the model's value at `at`: the least-squares line
// through the misses where they hold two values or more along an affine parameter; their mean
// relative miss, scaled to `predicted`, otherwise; 0 without misses.
[[nodiscard]] double correction(std::span<const Miss> misses, double at, double predicted,
                                bool affine = true);

// The slices of `d`'s runs along `along` (parameter indices, first first, kNearestActivations
// last if at all), `batch` the batch parameter (SIZE_MAX: none).
[[nodiscard]] Slices make_slices(const Dataset& d, std::vector<std::size_t> along,
                                 std::size_t batch);

}  // namespace memwatch::model
