#include "memwatch/model/hypothesis.hpp"

#include <cmath>

namespace memwatch::model {

Eigen::MatrixXd design_matrix(const Dataset& d, const std::vector<Feature>& features) {
  const auto n = static_cast<Eigen::Index>(d.rows.size());
  Eigen::MatrixXd m(n, static_cast<Eigen::Index>(features.size()) + 1);
  for (Eigen::Index i = 0; i < n; ++i) {
    m(i, 0) = 1;
    for (std::size_t k = 0; k < features.size(); ++k)
      m(i, static_cast<Eigen::Index>(k) + 1) = evaluate(features[k], d.rows[i].x);
  }
  return m;
}

Eigen::VectorXd targets(const Dataset& d) {
  Eigen::VectorXd y(static_cast<Eigen::Index>(d.rows.size()));
  for (std::size_t i = 0; i < d.rows.size(); ++i) y(static_cast<Eigen::Index>(i)) = d.rows[i].y;
  return y;
}

std::optional<Hypothesis> fit_hypothesis(const Dataset& d, std::vector<Feature> features,
                                         bool nonnegative, bool with_loo_shifts, Loss loss) {
  auto fit = fit_relative(design_matrix(d, features), targets(d), with_loo_shifts, loss);
  if (!fit) return std::nullopt;
  Hypothesis h;
  h.function.constant = fit->beta(0);
  for (std::size_t k = 0; k < features.size(); ++k) {
    const double c = fit->beta(static_cast<Eigen::Index>(k) + 1);
    if (nonnegative && c < 0) return std::nullopt;
    h.function.coefficients.push_back(c);
  }
  h.function.features = std::move(features);
  h.fit = std::move(*fit);
  return h;
}

Hypothesis drop_negligible(const Dataset& d, Hypothesis h, bool nonnegative, double epsilon,
                           Loss loss) {
  bool dropped = true;
  while (dropped && !h.function.features.empty()) {
    dropped = false;
    for (std::size_t k = 0; k < h.function.features.size() && !dropped; ++k) {
      bool negligible = true;
      for (const auto& row : d.rows) {
        const double part = h.function.coefficients[k] * evaluate(h.function.features[k], row.x);
        if (std::abs(part) >= epsilon * std::abs(h.function.evaluate(row.x))) {
          negligible = false;
          break;
        }
      }
      if (!negligible) continue;
      auto rest = h.function.features;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(k));
      if (auto refit =
              fit_hypothesis(d, std::move(rest), nonnegative, /*with_loo_shifts=*/false, loss)) {
        h = std::move(*refit);
        dropped = true;
      }
    }
  }
  return h;
}

}  // namespace memwatch::model
