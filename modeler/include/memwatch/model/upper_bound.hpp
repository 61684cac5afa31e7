// The upper bound behind OOM verdicts: jackknife+ (Barber et al.) on the leave-one-out fits,
// which come in closed form from the hat matrix. Residuals are relative to each leave-one-out
// prediction, so the bound scales with the prediction as memory errors do, and normalised by
// the local scale of the errors (locally weighted conformal, Lei et al. 2018): where the model
// is good the bound is tight, where runs jag it is wide.
#pragma once

#include <Eigen/Dense>
#include <span>
#include <string>
#include <vector>

#include "memwatch/model/dataset.hpp"
#include "memwatch/model/extrapolation.hpp"
#include "memwatch/model/function.hpp"
#include "memwatch/model/hypothesis.hpp"
#include "memwatch/model/local_scale.hpp"
#include "memwatch/model/slices.hpp"

namespace memwatch::model {

// The corrected prediction's leave-one-out scores (slices.hpp), on the runs whose peers along
// one parameter correct them in one way (a carried miss, or a line): the population a
// prediction corrected that way belongs to. A point without peers is predicted by the formula alone
// and bounded by the formula's scores; the corrected ones, several times smaller, would leave it
// uncovered, as a line's would leave a carried miss (89% coverage on the U-net sweep when pooled).
struct CorrectedScores {
  std::vector<std::size_t> runs;  // which runs (columns of loo_shifts)
  std::vector<double> ratios;     // (y_i - g_{-i}(x_i)) / g_{-i}(x_i), g the corrected prediction
  LocalScale scale;
  std::vector<double> run_scales;
};

// The scores of the predictions corrected along one parameter of the slices, by kind.
struct CorrectionScores {
  CorrectedScores carried;
  CorrectedScores line;
};

struct Bound {
  // "jackknife+" when there are enough runs for `level`; otherwise "jackknife+ max", the
  // largest leave-one-out value, whose nominal level is n / (n + 1).
  std::string method;
  double level = 0.95;  // nominal one-sided coverage actually delivered
  double requested_level = 0.95;
  std::size_t runs = 0;
  std::size_t rank = 0;            // which order statistic of the n leave-one-out values is used
  Eigen::MatrixXd loo_shifts;      // (1 + features) x runs: beta - beta_{-i}
  std::vector<double> loo_ratios;  // (y_i - f_{-i}(x_i)) / f_{-i}(x_i)
  // The local scale of the errors, and each run's scale from its neighbours without it; both
  // empty for a model saved before the scale existed: one width for every point then.
  LocalScale scale;
  std::vector<double> run_scales;
  std::vector<CorrectionScores> corrected;  // one per parameter of the slices' `along`
  // Past the runs' memory, the bound widens by the misses a refit without the furthest runs
  // made at them; empty (no widening) for too few runs or a model saved before it.
  ExtrapolationCheck extrapolation;

  [[nodiscard]] bool enough_runs() const { return level >= requested_level; }
  // Runs needed for the requested level: the smallest n with ceil(level * (n + 1)) <= n.
  [[nodiscard]] std::size_t runs_needed() const;
  [[nodiscard]] std::string describe() const;
};

// `h`, fitted to `d`, must carry its leave-one-out shifts (fit_hypothesis(..., with_loo_shifts =
// true)). `batch`, the batch parameter (SIZE_MAX: none), keeps the local scales of batch 1 and of
// batches from 2 on apart (local_scale.hpp). The corrected predictions' scores come with the
// slices (choose_corrections): each run's leave-one-out value is then the formula fitted without
// it, corrected by its peers' misses from that formula.
[[nodiscard]] Bound make_bound(const Hypothesis& h, const Dataset& d, double level,
                               std::size_t batch = SIZE_MAX);

// The parameters whose peers correct a prediction (slices.hpp), chosen on `d`'s runs: greedily,
// each the one whose peers' misses most lower the leave-one-out errors of the runs the earlier
// ones leave to the formula, and only while they lower them. Where runs scatter independently
// (noise, not a configuration's own offset) a peer's miss is its noise, and carrying it over
// adds it to this run's: none is chosen. `candidates` in the order ties are broken; `b` gets the
// chosen ones' scores.
[[nodiscard]] Slices choose_corrections(Bound& b, const Hypothesis& h, const Dataset& d,
                                        const std::vector<std::size_t>& candidates,
                                        std::size_t batch);

// The bound at x for the model `f` the bound was made from, and the slices it was made with.
[[nodiscard]] double upper_bound(const Bound& b, const Function& f, std::span<const double> x,
                                 const Slices& slices = {});

// Each run's leave-one-out ratio (y_i - g_{-i}(x_i)) / g_{-i}(x_i) as the model predicts it:
// corrected where the scores of a correction cover the run (bound.corrected), the formula's
// elsewhere.
[[nodiscard]] std::vector<double> predicted_ratios(const Bound& b);

// f's value at x, corrected by the misses of x's peers in `slices`.
[[nodiscard]] double corrected_value(const Function& f, std::span<const double> x,
                                     const Slices& slices);

}  // namespace memwatch::model
