#include "memwatch/model/upper_bound.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace memwatch::model {

namespace {

std::size_t order_statistic(double level, std::size_t n) {
  return static_cast<std::size_t>(std::ceil(level * static_cast<double>(n + 1) - 1e-9));
}

}  // namespace

std::size_t Bound::runs_needed() const {
  std::size_t n = 1;
  while (order_statistic(requested_level, n) > n) ++n;
  return n;
}

std::string Bound::describe() const {
  char buf[200];
  if (enough_runs())
    std::snprintf(buf, sizeof buf, "jackknife+ on %zu leave-one-out fits, nominal level %.0f%%",
                  runs, level * 100);
  else
    std::snprintf(buf, sizeof buf,
                  "too few runs for a %.0f%% jackknife+ bound (%zu, needs %zu): largest "
                  "leave-one-out value, nominal level %.1f%%",
                  requested_level * 100, runs, runs_needed(), level * 100);
  return buf;
}

Bound make_bound(const Hypothesis& h, const Dataset& d, double level) {
  Bound b;
  b.requested_level = level;
  b.runs = static_cast<std::size_t>(h.fit.loo_residuals.size());
  b.loo_shifts = h.fit.loo_shifts;
  for (double e : h.fit.loo_residuals) b.loo_ratios.push_back(e / (1 - e));
  std::vector<std::vector<double>> points;
  std::vector<double> errors;
  for (std::size_t i = 0; i < b.runs; ++i) {
    points.push_back(d.rows[i].x);
    errors.push_back(std::abs(b.loo_ratios[i]));
  }
  b.scale = make_local_scale(std::move(points), std::move(errors));
  for (std::size_t i = 0; i < b.runs; ++i)
    b.run_scales.push_back(b.scale.at(b.scale.points[i], /*skip=*/i));
  b.rank = order_statistic(level, b.runs);
  if (b.rank <= b.runs) {
    b.method = "jackknife+";
    b.level = level;
  } else {
    b.method = "jackknife+ max";
    b.rank = b.runs;
    b.level = static_cast<double>(b.runs) / static_cast<double>(b.runs + 1);
  }
  return b;
}

double upper_bound(const Bound& b, const Function& f, std::span<const double> x) {
  const auto m = static_cast<Eigen::Index>(f.features.size()) + 1;
  Eigen::VectorXd phi(m);
  phi(0) = 1;
  for (Eigen::Index k = 1; k < m; ++k)
    phi(k) = evaluate(f.features[static_cast<std::size_t>(k - 1)], x);
  const double full = f.evaluate(x);
  const bool scaled = !b.scale.empty() && b.run_scales.size() == b.loo_ratios.size();
  const double here = scaled ? b.scale.at(x) : 1;
  std::vector<double> values(b.loo_ratios.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double loo_prediction = full - phi.dot(b.loo_shifts.col(static_cast<Eigen::Index>(i)));
    const double ratio = scaled ? here * b.loo_ratios[i] / b.run_scales[i] : b.loo_ratios[i];
    values[i] = loo_prediction * (1 + ratio);
  }
  if (values.empty()) return full;
  const auto k = static_cast<std::ptrdiff_t>(std::clamp<std::size_t>(b.rank, 1, values.size()) - 1);
  std::nth_element(values.begin(), values.begin() + k, values.end());
  return std::max(values[static_cast<std::size_t>(k)], full);
}

}  // namespace memwatch::model
