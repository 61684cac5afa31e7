// Private to the searches: closed-form leave-one-out scoring that grows one column at a time.
#pragma once

#include <Eigen/Dense>
#include <cmath>
#include <optional>

namespace memwatch::model {

// The leave-one-out state of a fit in the weighted space (rows divided by the target, so the
// target is all ones): an orthonormal basis of the chosen columns, the residual, and the
// leverages (the hat matrix's diagonal). Adding a column costs O(n k).
struct PressState {
  Eigen::MatrixXd basis;  // n x k
  // The chosen weighted columns in the basis, A = basis · r (upper triangular, k x k), and the
  // all-ones target in it (basis^T 1): the fit's coefficients are r^-1 · ones_along.
  Eigen::MatrixXd r;
  Eigen::VectorXd ones_along;
  Eigen::VectorXd residual;
  Eigen::VectorXd leverage;

  static PressState constant_only(const Eigen::VectorXd& y) {
    PressState s;
    s.basis = y.cwiseInverse().normalized();
    s.r = s.basis.transpose() * s.basis;
    s.ones_along = Eigen::VectorXd::Constant(1, s.basis.col(0).sum());
    s.residual = Eigen::VectorXd::Ones(y.size()) - s.basis.col(0) * s.basis.col(0).sum();
    s.leverage = s.basis.col(0).cwiseAbs2();
    return s;
  }

  // The part of `column` orthogonal to the basis, normalised; nothing when the column is
  // (numerically) in the span already.
  [[nodiscard]] std::optional<Eigen::VectorXd> direction(const Eigen::VectorXd& column) const {
    Scratch s;
    if (!direction_into(column, s)) return std::nullopt;
    return std::move(s.v);
  }

  // The state with `column` added; nothing when the column is (numerically) in the span already
  // or would leave a run all the leverage.
  [[nodiscard]] std::optional<PressState> extended(const Eigen::VectorXd& column) const {
    Scratch step;
    if (!step_into(column, step)) return std::nullopt;
    PressState s;
    s.basis.resize(basis.rows(), basis.cols() + 1);
    s.basis << basis, step.v;
    s.r = std::move(step.r);
    s.ones_along = std::move(step.ones_along);
    s.residual = std::move(step.residual);
    s.leverage = std::move(step.leverage);
    return s;
  }

  // Buffers for score() and probe(), reused across the thousands of candidates a search
  // scores, so that scoring allocates nothing.
  struct Scratch {
    Eigen::VectorXd v;
    Eigen::VectorXd projection;
    Eigen::VectorXd residual;
    Eigen::VectorXd leverage;
    Eigen::MatrixXd r;
    Eigen::VectorXd ones_along;
  };

  // Leave-one-out MAPE with `column` added, without building the extended state.
  [[nodiscard]] double score(const Eigen::VectorXd& column, Scratch& s) const {
    if (!direction_into(column, s)) return INFINITY;
    const double along = s.v.dot(residual);
    double sum = 0;
    for (Eigen::Index i = 0; i < s.v.size(); ++i) {
      const double h = leverage(i) + s.v(i) * s.v(i);
      if (h > 1 - 1e-9) return INFINITY;
      sum += std::abs((residual(i) - s.v(i) * along) / (1 - h));
    }
    return sum / static_cast<double>(s.v.size());
  }

  // What extended(column) would give for score() and nonnegative(), without building it: the
  // last column of an exhaustive search's subsets needs no more. The score is computed as
  // score() computes it, to the last bit, so that ties rank as they would.
  struct Probe {
    double score = INFINITY;
    bool nonnegative = false;
  };
  [[nodiscard]] Probe probe(const Eigen::VectorXd& column, Scratch& s) const {
    if (!step_into(column, s)) return {};
    return {press(s.residual, s.leverage), signs_kept(s.r, s.ones_along)};
  }

  // Whether every coefficient but the constant's (column 0) is >= 0.
  [[nodiscard]] bool nonnegative() const { return signs_kept(r, ones_along); }

  [[nodiscard]] double score() const { return press(residual, leverage); }

 private:
  // direction(column) into s.v; false where there is none. Twice: one Gram-Schmidt pass loses
  // orthogonality when the column is nearly in the span.
  bool direction_into(const Eigen::VectorXd& column, Scratch& s) const {
    s.v = column;
    for (int pass = 0; pass < 2; ++pass) {
      s.projection.noalias() = basis.transpose() * s.v;
      s.v.noalias() -= basis * s.projection;
    }
    const double norm = s.v.norm();
    if (!(norm > 1e-7 * column.norm()) || !std::isfinite(norm)) return false;
    s.v /= norm;
    return true;
  }

  // The extended state's parts into s (all but its basis, which is this one's and s.v); false
  // where extended() has none.
  bool step_into(const Eigen::VectorXd& column, Scratch& s) const {
    if (!direction_into(column, s)) return false;
    s.leverage = leverage + s.v.cwiseAbs2();
    if ((s.leverage.array() > 1 - 1e-9).any()) return false;
    s.residual = residual - s.v * s.v.dot(residual);
    const Eigen::Index k = r.rows();
    s.r.setZero(k + 1, k + 1);
    s.r.topLeftCorner(k, k) = r;
    s.r.col(k).head(k).noalias() = basis.transpose() * column;
    s.r(k, k) = s.v.dot(column);
    s.ones_along.resize(k + 1);
    s.ones_along << ones_along, s.v.sum();
    return true;
  }

  // The leave-one-out MAPE of a fit with these residuals and leverages.
  static double press(const Eigen::VectorXd& residual, const Eigen::VectorXd& leverage) {
    return (residual.array() / (1 - leverage.array())).abs().mean();
  }

  static bool signs_kept(const Eigen::MatrixXd& r, const Eigen::VectorXd& ones_along) {
    const Eigen::VectorXd beta = r.triangularView<Eigen::Upper>().solve(ones_along);
    return (beta.tail(beta.size() - 1).array() >= 0).all();
  }
};

}  // namespace memwatch::model
