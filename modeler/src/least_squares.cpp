#include "memwatch/model/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace memwatch::model {

std::vector<double> loo_ratios(const LinearFit& fit) {
  std::vector<double> ratios;
  for (double e : fit.loo_residuals) ratios.push_back(e / (1 - e));
  return ratios;
}

Eigen::VectorXd huber_weights(const Eigen::VectorXd& residuals) {
  std::vector<double> size(residuals.data(), residuals.data() + residuals.size());
  for (double& r : size) r = std::abs(r);
  const auto mid = size.begin() + static_cast<std::ptrdiff_t>(size.size() / 2);
  std::nth_element(size.begin(), mid, size.end());
  // Below 1e-12 the residuals are rounding: an exact fit needs no reweighting.
  const double threshold = std::max(huber_k * 1.4826 * *mid, 1e-12);
  Eigen::VectorXd w(residuals.size());
  for (Eigen::Index i = 0; i < w.size(); ++i)
    w(i) = std::abs(residuals(i)) <= threshold ? 1 : threshold / std::abs(residuals(i));
  return w;
}

std::optional<LinearFit> fit_relative(const Eigen::MatrixXd& design, const Eigen::VectorXd& y,
                                      bool with_loo_shifts, Loss loss) {
  const Eigen::Index n = design.rows(), m = design.cols();
  if (n <= m || !design.allFinite()) return std::nullopt;
  const Eigen::MatrixXd relative = y.cwiseInverse().asDiagonal() * design;
  // Columns span many orders of magnitude (1 next to batch * dim^3): scale them to unit norm so
  // the rank decision and the solve see a well-conditioned matrix.
  const Eigen::VectorXd scale = relative.colwise().norm().transpose();
  if ((scale.array() <= 0).any()) return std::nullopt;
  const Eigen::MatrixXd scaled = relative * scale.cwiseInverse().asDiagonal();

  // Rows weighted by sqrt(w): the weighted fit minimises Σ w_i r_i². Squared loss is one pass
  // with unit weights; Huber's reweights until the weights settle.
  Eigen::VectorXd root_w = Eigen::VectorXd::Ones(n);
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr;
  Eigen::VectorXd beta_scaled;
  const int passes = loss == Loss::huber ? 40 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    qr.compute(root_w.asDiagonal() * scaled);
    qr.setThreshold(1e-10);
    if (qr.rank() < m) return std::nullopt;
    beta_scaled = qr.solve(root_w);
    if (pass + 1 == passes) break;
    const Eigen::VectorXd next =
        huber_weights(Eigen::VectorXd::Ones(n) - scaled * beta_scaled).cwiseSqrt();
    if ((next - root_w).cwiseAbs().maxCoeff() < 1e-6) break;
    root_w = next;
  }
  const Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(n, m);
  const Eigen::VectorXd leverage = q.rowwise().squaredNorm();
  if ((leverage.array() > 1 - 1e-9).any()) return std::nullopt;

  LinearFit fit;
  fit.beta = beta_scaled.cwiseQuotient(scale);
  fit.residuals = Eigen::VectorXd::Ones(n) - scaled * beta_scaled;
  // The weighted residual sqrt(w_i) r_i over 1 - h_ii, divided by sqrt(w_i) again.
  fit.loo_residuals = fit.residuals.cwiseQuotient((1 - leverage.array()).matrix());
  fit.train_mape = fit.residuals.cwiseAbs().mean();
  fit.loo_mape = fit.loo_residuals.cwiseAbs().mean();
  if (!std::isfinite(fit.loo_mape)) return std::nullopt;
  if (with_loo_shifts) {
    // (A^T W A)^{-1} a_i sqrt(w_i) is the weighted least-squares solution for the i-th unit
    // vector; the whole set at once is the pseudo-inverse. Leaving run i out shifts the fit by
    // that times its weighted leave-one-out residual.
    const Eigen::MatrixXd pinv = qr.solve(Eigen::MatrixXd::Identity(n, n));
    fit.loo_shifts = scale.cwiseInverse().asDiagonal() * pinv *
                     fit.loo_residuals.cwiseProduct(root_w).asDiagonal();
  }
  return fit;
}

}  // namespace memwatch::model
