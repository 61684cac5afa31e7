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
  Eigen::MatrixXd basis;    // n x k
  Eigen::MatrixXd columns;  // the weighted columns the basis was built from, in order
  Eigen::VectorXd residual;
  Eigen::VectorXd leverage;

  static PressState constant_only(const Eigen::VectorXd& y) {
    PressState s;
    s.basis = y.cwiseInverse().normalized();
    s.columns = s.basis;
    s.residual = Eigen::VectorXd::Ones(y.size()) - s.basis.col(0) * s.basis.col(0).sum();
    s.leverage = s.basis.col(0).cwiseAbs2();
    return s;
  }

  // The part of `column` orthogonal to the basis, normalised; nothing when the column is
  // (numerically) in the span already.
  [[nodiscard]] std::optional<Eigen::VectorXd> direction(const Eigen::VectorXd& column) const {
    Eigen::VectorXd v = column;
    // Twice: one Gram-Schmidt pass loses orthogonality when the column is nearly in the span.
    for (int pass = 0; pass < 2; ++pass) v -= basis * (basis.transpose() * v);
    const double norm = v.norm();
    if (!(norm > 1e-7 * column.norm()) || !std::isfinite(norm)) return std::nullopt;
    return v / norm;
  }

  [[nodiscard]] std::optional<PressState> extended(const Eigen::VectorXd& column) const {
    auto v = direction(column);
    if (!v) return std::nullopt;
    PressState s;
    s.leverage = leverage + v->cwiseAbs2();
    if ((s.leverage.array() > 1 - 1e-9).any()) return std::nullopt;
    s.residual = residual - *v * v->dot(residual);
    s.basis.resize(basis.rows(), basis.cols() + 1);
    s.basis << basis, *v;
    s.columns.resize(columns.rows(), columns.cols() + 1);
    s.columns << columns, column;
    return s;
  }

  // Buffers for score(), reused across the thousands of candidates a search scores, so that
  // scoring allocates nothing.
  struct Scratch {
    Eigen::VectorXd v;
    Eigen::VectorXd projection;
  };

  // Leave-one-out MAPE with `column` added, without building the extended state.
  [[nodiscard]] double score(const Eigen::VectorXd& column, Scratch& s) const {
    s.v = column;
    for (int pass = 0; pass < 2; ++pass) {
      s.projection.noalias() = basis.transpose() * s.v;
      s.v.noalias() -= basis * s.projection;
    }
    const double norm = s.v.norm();
    if (!(norm > 1e-7 * column.norm()) || !std::isfinite(norm)) return INFINITY;
    s.v /= norm;
    const double along = s.v.dot(residual);
    double sum = 0;
    for (Eigen::Index i = 0; i < s.v.size(); ++i) {
      const double h = leverage(i) + s.v(i) * s.v(i);
      if (h > 1 - 1e-9) return INFINITY;
      sum += std::abs((residual(i) - s.v(i) * along) / (1 - h));
    }
    return sum / static_cast<double>(s.v.size());
  }

  // Whether every coefficient but the constant's (column 0) is >= 0. Gram-Schmidt in column
  // order makes basis^T columns upper triangular (A = Q R), so the fit is R^-1 Q^T 1.
  [[nodiscard]] bool nonnegative() const {
    const Eigen::MatrixXd r = basis.transpose() * columns;
    const Eigen::VectorXd rhs = basis.transpose() * Eigen::VectorXd::Ones(basis.rows());
    const Eigen::VectorXd beta = r.triangularView<Eigen::Upper>().solve(rhs);
    return (beta.tail(beta.size() - 1).array() >= 0).all();
  }

  [[nodiscard]] double score() const {
    return (residual.array() / (1 - leverage.array())).abs().mean();
  }
};

}  // namespace memwatch::model
