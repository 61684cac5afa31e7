// Weighted least squares with relative weights (we report relative error, so each run's residual
// is divided by its target) and leave-one-out residuals in closed form from the hat matrix
// (PRESS: e_i / (1 - h_ii)), with no refits.
#pragma once

#include <Eigen/Dense>
#include <optional>

namespace memwatch::model {

struct LinearFit {
  Eigen::VectorXd beta;           // coefficients of the design's columns, unweighted units
  Eigen::VectorXd residuals;      // relative: (y - f(x)) / y
  Eigen::VectorXd loo_residuals;  // relative, each run left out of its own fit
  // Column i is beta - beta_{-i}, the change of the coefficients when run i is left out; filled
  // only when asked for (the jackknife+ bound needs it, the search does not).
  Eigen::MatrixXd loo_shifts;
  double train_mape = 0;
  double loo_mape = 0;
};

// `design` is n x m (a column of ones first, by convention); `y` is positive. Returns nothing
// when the design is rank-deficient or a run has leverage 1 (its leave-one-out is undefined).
[[nodiscard]] std::optional<LinearFit> fit_relative(const Eigen::MatrixXd& design,
                                                    const Eigen::VectorXd& y,
                                                    bool with_loo_shifts = false);

}  // namespace memwatch::model
