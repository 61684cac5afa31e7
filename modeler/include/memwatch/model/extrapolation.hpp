// How far the formula's misses grow past the runs. Leave-one-out scores measure the formula
// among its runs; a target at eight times the largest run's volume asks for a slope that the
// runs, near the trainer's floor, may not show yet (sweep --auto toward batch 8 at 64^3 from six
// runs of 16-32^3: predicted 10% low, its bound +3.7%). So for each parameter the formula's terms
// are fitted again without the runs at its largest value and asked at them, as a point past that
// value will be asked: the upper quartile of the misses per e-fold of reach is how much wider the
// bound grows per e-fold past the runs along that parameter (or the same a step before, if lower:
// growth shows at both steps, a jag at one). Where the runs cannot show it (that
// case: at 32^3 the growth is within the jags), a point far past what the check reached is not
// vouched for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memwatch/model/dataset.hpp"
#include "memwatch/model/function.hpp"
#include "memwatch/model/least_squares.hpp"

namespace memwatch::model {

// Reach along a parameter is measured in the formula's variable part, f(x) - constant (the bytes
// the parameters add): the natural log of its value at x over its value at x with that parameter
// brought back to its largest run value.
struct ParamCheck {
  std::size_t param = 0;
  double top = 0;  // the parameter's largest value among the runs
  // The upper quartile of the held-out runs' under-predictions per unit of reach, relative to the
  // variable part (a slope missed by 10% is a 10% miss where the variable part is the whole peak).
  // Without a check: the formula's leave-one-out MAPE, the least rate a point past a parameter
  // that is not affine is widened by.
  double miss_per_reach = 0;
  std::size_t held_out = 0;  // runs the check predicted from the others; 0: no check made
  // Runs at the value a step below the largest, predicted without both (0: no such step). A
  // slope that grows shows at both steps, a jag of one value at one: the rate is the lower of the
  // two steps' upper quartiles.
  std::size_t held_before = 0;
  double checked_reach = 0;  // the furthest of them past the rest
  // The priors hold memory affine in this parameter (batch): measured on the reference sweeps
  // to 0.1%, that vouches for a point past it as far as the formula is affine, checked or not,
  // where the runs show its slope.
  bool affine = false;
  // Whether the runs' own span of the parameter moves the formula, constant and all, by
  // kMinReach or more (at some value of the others). A slope that small is the allocator's
  // slack more than the parameter's bytes: an MLP trainer's runs at batch 64-512 grew by 2.7%
  // at most over that span; read as a slope 8x past them, the prediction and its bound were
  // 25% low at batch 4096.
  bool slope_shown = true;
};

// What the checks say at one point past the runs (or within them: no widening, reach 0).
struct PastTheRuns {
  // How much the bound widens, relative to the prediction: each parameter the point lies past
  // contributes its rate times its reach; a parameter without a check takes the largest rate,
  // and, unless affine, at least the formula's leave-one-out error per e-fold: with two values
  // of dim the runs
  // say nothing of how the misses grow past them, and the affine batch's rate, often 0, is no
  // answer (the Python trainer's runs at 16^3 and 32^3 asked at 64^3: 6.5% and 7.2% under, the
  // bound 0.4% and 1.1% under the truth without this).
  double widening = 0;
  double reach = 0;  // the sum of its reaches along the parameters it is past
  // Whether the checks reached at least half as far along each of those parameters (or the
  // point lies within kMinReach past the runs): further, a rate measured over a short reach is
  // extrapolated itself, and the bound is not vouched for. An affine parameter whose slope the
  // runs do not show vouches no further than kMinReach in its own ratio.
  bool vouched = true;
};

struct ExtrapolationCheck {
  std::vector<ParamCheck> params;  // one per numeric parameter

  [[nodiscard]] PastTheRuns at(const Function& f, std::span<const double> x) const;
};

// Runs whose reach from the rest is under `kMinReach` are not counted: their miss is the jags
// every run has, which the bound holds already.
inline constexpr double kMinReach = 0.25;  // e^0.25: 28% more variable memory

// How the formula's terms are refitted without the furthest runs: as the fit did (`nonnegative`,
// `loss`), with the bound's local scale (`apart`, local_scale.hpp) for the misses it covers.
struct Refit {
  bool nonnegative = false;
  Loss loss = Loss::squared;
  std::size_t apart = SIZE_MAX;
};

// A parameter is checked when it has three values or more and the runs below its largest value
// are at least one more than the formula's coefficients; `loo_mape` is f's on `d`.
[[nodiscard]] ExtrapolationCheck check_extrapolation(const Dataset& d, const Function& f,
                                                     const Refit& how, double loo_mape);

}  // namespace memwatch::model
