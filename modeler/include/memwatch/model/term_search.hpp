// The hypothesis search over sums of products of powers: constant + up to K compound terms.
// Forward selection over the whole term dictionary scores each candidate by closed-form
// leave-one-out error with an incremental orthogonal basis (O(n k) per candidate); the
// candidates it met near the top, and the neighbours of what it chose, then form a small pool
// whose subsets are all scored the same way; the best few are fitted properly and ranked.
#pragma once

#include <vector>

#include "memwatch/model/dataset.hpp"
#include "memwatch/model/hypothesis.hpp"

namespace memwatch::model {

struct TermSearchOptions {
  // Exponents a parameter may carry in a term; 0 means the parameter is absent.
  std::vector<double> exponents{0, 0.5, 1, 1.5, 2, 3};
  // Per parameter, when not empty: the exponents that parameter may carry instead (the priors'
  // affine batch and whole powers of a volume's edge, see priors.hpp).
  std::vector<std::vector<double>> param_exponents;
  // Per parameter, when not empty: the power every hypothesis must carry it to, without a log (0:
  // none), for parameters whose axes the user stated (priors.hpp).
  std::vector<double> required_power;
  // Per parameter, when not empty: whether it may also enter as 2^x and 4^x (priors.hpp).
  std::vector<bool> exponential;
  // Powers of log2(x) a factor may carry besides x^i; {0} disables log factors.
  std::vector<int> log_exponents{0};
  // The largest sum of a term's powers (2^x and 4^x add none); 0: no limit (priors.hpp).
  double max_degree = 0;
  std::size_t max_terms = 4;      // K
  std::size_t max_factors = 3;    // parameters per term
  std::size_t keep_per_step = 6;  // candidates per forward step that join the exhaustive pool
  std::size_t pool_limit = 26;
  // Pairs of a term and its parent (one factor dropped) per forward step that join the pool:
  // together they give the factor an offset, which neither gives alone.
  std::size_t pairs_per_step = 2;
  std::size_t required_per_step = 2;  // terms carrying a required power, per forward step
  std::size_t refit_limit = 256;      // pool subsets fitted properly (sign checks, exact costs)
  std::size_t refit_per_size = 4;     // and at least this many of each size
  bool swaps = true;  // improve the best subset of each size by swaps against the dictionary
  // Also search sums of one-parameter terms on their own, for where the whole dictionary's
  // products stand in for several of a law's terms at once (search_terms).
  bool sums_apart = true;
  bool nonnegative = true;
  // The loss the best subsets are fitted and ranked by (the scan before them is least squares).
  Loss loss = Loss::squared;
  // A simpler model wins when its leave-one-out MAPE is within
  // max(relative * best, absolute, standard_errors * SE) of the best, SE being the standard
  // error of the best's mean absolute leave-one-out residual: with a dozen runs the ranking of
  // hundreds of forms is mostly noise, and the one-standard-error rule takes the simplest
  // among those the data cannot tell apart.
  double simplicity_relative = 0.05;
  double simplicity_absolute = 1e-4;
  double simplicity_standard_errors = 1;
  // Before that rule, the ranking's anchor is the hypothesis with the least
  // n ln(loo MAPE) + penalty k ln(n) (a BIC on the leave-one-out errors; 0 ranks by error alone).
  double complexity_penalty = 1;
  double negligible = 5e-4;  // Extra-P's 0.05%: drop terms below it at every run
};

// All valid hypotheses found, the selected one first, then the others by leave-one-out MAPE.
// Empty only when no term fits at all.
[[nodiscard]] std::vector<Hypothesis> search_terms(const Dataset& d,
                                                   const TermSearchOptions& options);

// The term dictionary the search draws from (exposed for tests and the docs' counts).
[[nodiscard]] std::vector<CompoundTerm> term_dictionary(std::size_t params,
                                                        const TermSearchOptions& options);

// The exponents parameter `param` may carry under `options`.
[[nodiscard]] const std::vector<double>& exponents_of(const TermSearchOptions& options,
                                                      std::size_t param);

// Picks from `ranked` (sorted by leave-one-out MAPE) the hypothesis with the least information
// criterion, then the fewest-feature one within the simplicity tolerance of it, and moves that
// to the front.
void prefer_simple(std::vector<Hypothesis>& ranked, const TermSearchOptions& options);

}  // namespace memwatch::model
