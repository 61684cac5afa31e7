// The closed forms must agree with what they replace: refitting with each run left out.
#include "memwatch/model/least_squares.hpp"

#include <gtest/gtest.h>

#include <random>

namespace memwatch::model {
namespace {

struct Problem {
  Eigen::MatrixXd design;
  Eigen::VectorXd y;
};

Problem random_problem(Eigen::Index n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(1, 100);
  std::normal_distribution<double> noise(0, 0.05);
  Problem p{Eigen::MatrixXd(n, 3), Eigen::VectorXd(n)};
  for (Eigen::Index i = 0; i < n; ++i) {
    const double a = u(rng), b = u(rng);
    p.design.row(i) << 1, a, a * b * b;
    p.y(i) = (50 + 3 * a + 0.01 * a * b * b) * (1 + noise(rng));
  }
  return p;
}

// Plain relative least squares on the rows except `skip`.
Eigen::VectorXd refit_without(const Problem& p, Eigen::Index skip) {
  const Eigen::Index n = p.y.size();
  Eigen::MatrixXd a(n - 1, p.design.cols());
  Eigen::VectorXd b(n - 1);
  for (Eigen::Index i = 0, r = 0; i < n; ++i) {
    if (i == skip) continue;
    a.row(r) = p.design.row(i) / p.y(i);
    b(r++) = 1;
  }
  return a.colPivHouseholderQr().solve(b);
}

TEST(LeastSquares, LeaveOneOutResidualsMatchRefits) {
  const Problem p = random_problem(30, 4);
  const auto fit = fit_relative(p.design, p.y, /*with_loo_shifts=*/true);
  ASSERT_TRUE(fit);
  for (Eigen::Index i = 0; i < p.y.size(); ++i) {
    const Eigen::VectorXd beta = refit_without(p, i);
    const double predicted = p.design.row(i).dot(beta);
    EXPECT_NEAR(fit->loo_residuals(i), (p.y(i) - predicted) / p.y(i), 1e-9) << "run " << i;
    const Eigen::VectorXd shifted = fit->beta - fit->loo_shifts.col(i);
    for (Eigen::Index k = 0; k < beta.size(); ++k)
      EXPECT_NEAR(shifted(k), beta(k), 1e-7 * std::abs(beta(k)) + 1e-12) << "run " << i;
  }
  EXPECT_NEAR(fit->loo_mape, fit->loo_residuals.cwiseAbs().mean(), 1e-15);
  EXPECT_GT(fit->loo_mape, fit->train_mape);
}

TEST(LeastSquares, FitIsRelative) {
  // Scaling one run's target scales its weight away: the relative residuals stay balanced.
  const Problem p = random_problem(20, 9);
  const auto fit = fit_relative(p.design, p.y);
  ASSERT_TRUE(fit);
  const Eigen::VectorXd unweighted = (p.y - p.design * fit->beta).cwiseQuotient(p.y);
  EXPECT_LT((unweighted - fit->residuals).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(LeastSquares, RankDeficientDesignIsRefused) {
  Problem p = random_problem(20, 2);
  p.design.col(2) = 2 * p.design.col(1);
  EXPECT_FALSE(fit_relative(p.design, p.y));
}

TEST(LeastSquares, TooFewRowsAreRefused) {
  const Problem p = random_problem(3, 2);
  EXPECT_FALSE(fit_relative(p.design, p.y));
}

}  // namespace
}  // namespace memwatch::model
