#include "memwatch/model/least_squares.hpp"

#include <cmath>

namespace memwatch::model {

std::optional<LinearFit> fit_relative(const Eigen::MatrixXd& design, const Eigen::VectorXd& y,
                                      bool with_loo_shifts) {
  const Eigen::Index n = design.rows(), m = design.cols();
  if (n <= m || !design.allFinite()) return std::nullopt;
  Eigen::MatrixXd a = y.cwiseInverse().asDiagonal() * design;
  // Columns span many orders of magnitude (1 next to batch * dim^3): scale them to unit norm so
  // the rank decision and the solve see a well-conditioned matrix.
  Eigen::VectorXd scale = a.colwise().norm().transpose();
  if ((scale.array() <= 0).any()) return std::nullopt;
  a = a * scale.cwiseInverse().asDiagonal();
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  qr.setThreshold(1e-10);
  if (qr.rank() < m) return std::nullopt;
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(n);
  const Eigen::VectorXd beta_scaled = qr.solve(ones);
  const Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(n, m);
  const Eigen::VectorXd leverage = q.rowwise().squaredNorm();
  if ((leverage.array() > 1 - 1e-9).any()) return std::nullopt;

  LinearFit fit;
  fit.beta = beta_scaled.cwiseQuotient(scale);
  fit.residuals = ones - a * beta_scaled;
  fit.loo_residuals = fit.residuals.cwiseQuotient((1 - leverage.array()).matrix());
  fit.train_mape = fit.residuals.cwiseAbs().mean();
  fit.loo_mape = fit.loo_residuals.cwiseAbs().mean();
  if (!std::isfinite(fit.loo_mape)) return std::nullopt;
  if (with_loo_shifts) {
    // (A^T A)^{-1} a_i is the least-squares solution for the i-th unit vector; the whole set at
    // once is the pseudo-inverse.
    const Eigen::MatrixXd pinv = qr.solve(Eigen::MatrixXd::Identity(n, n));
    fit.loo_shifts = scale.cwiseInverse().asDiagonal() * pinv * fit.loo_residuals.asDiagonal();
  }
  return fit;
}

}  // namespace memwatch::model
