// A Hypothesis is a Function fitted to one dataset, with the costs the searches rank it by.
#pragma once

#include <optional>
#include <vector>

#include "memwatch/model/dataset.hpp"
#include "memwatch/model/function.hpp"
#include "memwatch/model/least_squares.hpp"

namespace memwatch::model {

struct Hypothesis {
  Function function;
  LinearFit fit;
  [[nodiscard]] double loo_mape() const { return fit.loo_mape; }
  [[nodiscard]] double train_mape() const { return fit.train_mape; }
};

// The design matrix of `features` over the dataset's rows: a column of ones, then one column per
// feature.
[[nodiscard]] Eigen::MatrixXd design_matrix(const Dataset& d, const std::vector<Feature>& features);
[[nodiscard]] Eigen::VectorXd targets(const Dataset& d);

// Fits constant + features by relative least squares. Returns nothing when the fit is undefined
// or, with `nonnegative`, when a feature's coefficient comes out negative (memory terms add
// bytes; the constant may take either sign).
[[nodiscard]] std::optional<Hypothesis> fit_hypothesis(const Dataset& d,
                                                       std::vector<Feature> features,
                                                       bool nonnegative,
                                                       bool with_loo_shifts = false,
                                                       Loss loss = Loss::squared);

// Drops, one at a time, features that contribute less than `epsilon` of the prediction at every
// run (Extra-P's rule, 0.05% by default), refitting after each drop.
[[nodiscard]] Hypothesis drop_negligible(const Dataset& d, Hypothesis h, bool nonnegative,
                                         double epsilon, Loss loss = Loss::squared);

}  // namespace memwatch::model
