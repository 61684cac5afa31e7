// The modeler's API: fit a Dataset into a Model, ask the Model for predictions with an upper
// bound. A Model holds one SubModel per combination of categorical labels and regime.
#pragma once

#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "memwatch/model/dataset.hpp"
#include "memwatch/model/function.hpp"
#include "memwatch/model/gp_search.hpp"
#include "memwatch/model/priors.hpp"
#include "memwatch/model/regime.hpp"
#include "memwatch/model/slices.hpp"
#include "memwatch/model/term_search.hpp"
#include "memwatch/model/upper_bound.hpp"

namespace memwatch::model {

struct FitOptions {
  TermSearchOptions terms;
  GpOptions gp;
  // The GP search runs when the term search's leave-one-out MAPE is above this: the error is
  // then more than noise. 0 always runs it; infinity never does.
  double gp_above = 0.005;
  // Nor with fewer runs than this: a tree picked from millions on a dozen runs fits their noise
  // (the bound needs as many for its 95% level).
  std::size_t gp_min_runs = 20;
  Priors priors;
  // The loss the chosen formula is finally fitted by (its coefficients, leave-one-out errors
  // and bound): memory runs off the law (a program path no formula follows) are few and far off,
  // and least squares lets them pull every other prediction toward them.
  Loss loss = Loss::huber;
  double bound_level = 0.95;
  std::size_t runner_ups = 3;  // alternative models kept to widen the bound off the data's range
  // Regimes: when the whole fit's leave-one-out MAPE is above `split_above`, the runs are cut in
  // two at the break that fits best (and each side again, up to `split_depth` levels); the cut
  // is kept only when it brings the leave-one-out MAPE below `split_gain` times the whole's,
  // every part beats the single formula on its runs, and a side of a dozen runs or fewer does
  // so chosen again without each run (regimes.cpp). A side needs at least `min_regime_runs`
  // runs (0: three per fitted coefficient).
  double split_above = 0.005;
  double split_gain = 0.5;
  std::size_t split_depth = 1;
  std::size_t split_lookahead = 3;  // cuts screened again with their sides cut too
  std::size_t min_regime_runs = 0;
  // Correct each prediction by the misses of the training runs that differ from it in one
  // parameter (slices.hpp: its configuration's other batch sizes, first), where they pay.
  bool corrections = true;
};

// A dataset the modeler cannot fit: too few runs for the parameters (in some category).
struct FitError : std::runtime_error {
  FitError(std::size_t line_no, const std::string& what_went_wrong)
      : std::runtime_error(what_went_wrong), line(line_no) {}
  std::size_t line;  // source line of the last run concerned; 0 when unknown
};

struct SubModel {
  std::map<std::string, std::string> labels;  // empty when there are no categories
  std::vector<Cut> domain;                    // empty when one regime covers every value
  Function function;
  std::string search;  // "terms" or "terms+gp": which search found the function
  double loo_mape = 0;
  double train_mape = 0;
  std::size_t runs = 0;
  std::vector<std::pair<double, double>> range;  // per parameter: training min, max
  Bound bound;
  std::vector<Function> runner_ups;
  Slices slices;  // empty: the formula alone
};

struct Prediction {
  double value = 0;
  double upper = 0;
  bool extrapolating = false;  // a parameter lies outside the training range
  // How far past the runs, as the ratio of the formula's variable part here to the runs' along
  // the parameters it is past (extrapolation.hpp); 1 within them.
  double reach_ratio = 1;
  bool vouched = true;  // the runs' extrapolation checks reach half as far or further
};

// "" within the runs; otherwise a note for people: outside the training range, how far past the
// runs' memory, and whether the runs' checks vouch for the bound that far.
[[nodiscard]] std::string extrapolation_note(const Prediction& p);

struct Model {
  std::string target;
  std::vector<std::string> params;
  std::vector<std::string> categories;
  std::vector<SubModel> parts;
  std::map<std::string, int> stated_axes;  // what the user stated it under (Priors::axes)

  // Throws std::invalid_argument for a missing or unknown parameter, or labels with no model.
  [[nodiscard]] Prediction predict(const Point& p) const;
  [[nodiscard]] Prediction predict(const SubModel& part, std::span<const double> x) const;
  [[nodiscard]] const SubModel& part_for(const Point& p) const;
  // The point's numeric values in parameter order; throws for a missing or unknown one.
  [[nodiscard]] std::vector<double> values_of(const Point& p) const;
  // Formula, coefficients, errors and bound method of every part, for people.
  [[nodiscard]] std::string describe() const;
};

[[nodiscard]] Model fit(const Dataset& d, const FitOptions& options = {});

// The fitted parts without the packaging: one group's model (used by fit, and by the bench).
[[nodiscard]] SubModel fit_group(const Dataset& d, const FitOptions& options);

// The term search's options with the priors' exponent sets for these runs' parameters, their
// signs (signed on enough runs) and the fit's loss.
[[nodiscard]] TermSearchOptions shaped_terms(const Dataset& d, const FitOptions& options);

// One group's model cut into regimes where that fits clearly better (regimes.cpp); a single
// part with an empty domain otherwise.
[[nodiscard]] std::vector<SubModel> fit_regimes(const Dataset& d, const FitOptions& options,
                                                std::size_t depth);

// The single formula `f`'s leave-one-out error on each run of `d`, |e_i|, in row order, fitted
// by `loss` as the final fit is.
[[nodiscard]] Eigen::VectorXd loo_errors(const Dataset& d, const Function& f, bool nonnegative,
                                         Loss loss = Loss::squared);

// Each of `part`'s runs' leave-one-out error relative to the run, as the part predicts it: the
// formula's (bound.loo_ratios), or, where it corrects a prediction by the misses of its peers
// (slices.hpp), the corrected one for the runs those scores cover (bound.corrected). Empty for a
// part without a bound.
[[nodiscard]] Eigen::VectorXd predicted_errors(const SubModel& part);

// A cut must make every part better, not only the average: each part's leave-one-out MAPE, as
// it predicts (predicted_errors), must be below the single formula's (`whole_errors`, its
// predicted_errors) on the same runs, or one side could pay for the other (a side at 50% error
// under an average that halved). Against the single formula's uncorrected errors, a side from
// batch 2 on looked better where the corrected formula was better still (0.34% against 0.24% on
// a split of the Python U-net sweep), and the cut tripled the held-out error.
[[nodiscard]] bool every_part_better(const Dataset& d, const Eigen::VectorXd& whole_errors,
                                     const std::vector<SubModel>& parts);

}  // namespace memwatch::model
