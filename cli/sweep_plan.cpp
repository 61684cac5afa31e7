#include "sweep_plan.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "args.hpp"
#include "memwatch/model/priors.hpp"

namespace memwatch::cli {

namespace {

constexpr std::size_t kValuesPerParameter = 3;
// How much an unvisited corner of the grid weighs against information at the target: enough to
// break ties between points the model cannot tell apart, not to outvote it.
constexpr double kSpreadWeight = 0.05;

double number(const std::string& text) {
  return parse_number(text, "value");
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > 1e-12 * std::max(std::abs(a[i]), 1.0)) return false;
  return true;
}

// The part of the information a run at `c` would add about the prediction at `t`: for the
// linear-in-coefficients model `f`, the fraction of the prediction's variance at `t` it removes
// (Sherman-Morrison on the runs' normal matrix). Rows are divided by the model's value, since
// memory errors are relative; columns by their largest value, so dim^3 * batch and 1 mix.
double variance_share(const model::Function& f, const std::vector<std::vector<double>>& xs,
                      std::span<const double> t, std::span<const double> c) {
  const auto m = static_cast<Eigen::Index>(f.features.size()) + 1;
  auto row = [&](std::span<const double> x) {
    Eigen::VectorXd phi(m);
    phi(0) = 1;
    for (Eigen::Index k = 1; k < m; ++k)
      phi(k) = model::evaluate(f.features[static_cast<std::size_t>(k - 1)], x);
    return Eigen::VectorXd(phi / std::max(std::abs(f.evaluate(x)), 1e-300));
  };
  Eigen::MatrixXd rows(static_cast<Eigen::Index>(xs.size()), m);
  for (std::size_t i = 0; i < xs.size(); ++i)
    rows.row(static_cast<Eigen::Index>(i)) = row(xs[i]).transpose();
  Eigen::VectorXd at_t = row(t), at_c = row(c);
  Eigen::VectorXd scale = rows.cwiseAbs().colwise().maxCoeff().transpose();
  scale = scale.cwiseMax(at_t.cwiseAbs()).cwiseMax(1e-300);
  rows = rows * scale.cwiseInverse().asDiagonal();
  at_t = at_t.cwiseQuotient(scale);
  at_c = at_c.cwiseQuotient(scale);
  const Eigen::MatrixXd inverse =
      (rows.transpose() * rows).completeOrthogonalDecomposition().pseudoInverse();
  const double variance = at_t.dot(inverse * at_t);
  if (!(variance > 0)) return 0;
  const double shared = at_t.dot(inverse * at_c);
  return shared * shared / (1 + at_c.dot(inverse * at_c)) / variance;
}

}  // namespace

std::vector<std::size_t> Planner::varying() const {
  std::vector<std::size_t> out;
  for (std::size_t a = 0; a < axes.size(); ++a)
    if (axes[a].values.size() > 1) out.push_back(a);
  return out;
}

std::vector<std::string> Planner::parameter_names() const {
  std::vector<std::string> names;
  for (std::size_t a : varying()) names.push_back(axes[a].name);
  return names;
}

std::vector<double> Planner::parameters_of(const std::vector<double>& values) const {
  std::vector<double> x;
  for (std::size_t a : varying()) x.push_back(values[a]);
  return x;
}

model::Point Planner::model_point(const std::vector<double>& values) const {
  model::Point p;
  for (std::size_t a : varying()) p.values[axes[a].name] = values[a];
  return p;
}

std::vector<double> Planner::values_of(const Point& p) const {
  std::vector<double> values;
  for (std::size_t a = 0; a < axes.size(); ++a) values.push_back(number(axes[a].values[p[a]]));
  return values;
}

bool Planner::covered(const std::vector<Measured>& runs) const {
  for (std::size_t a : varying()) {
    std::set<double> seen;
    for (const auto& r : runs)
      if (r.peak) seen.insert(r.values[a]);
    if (seen.size() < std::min(kValuesPerParameter, axes[a].values.size())) return false;
  }
  return true;
}

std::vector<Point> Planner::candidates(const std::vector<Measured>& runs) const {
  const auto names = parameter_names();
  const std::size_t batch_at = model::batch_param(names, priors);
  bool skip_batch_one = false;
  std::size_t batch_axis = 0;
  if (priors.batch_one_regime && batch_at < names.size()) {
    batch_axis = varying()[batch_at];
    const auto& values = axes[batch_axis].values;
    const auto above_one = std::count_if(values.begin(), values.end(),
                                         [](const std::string& v) { return number(v) > 1; });
    skip_batch_one = target[batch_axis] > 1 && above_one >= 3;
  }
  std::vector<Point> out;
  Point p(axes.size(), 0);
  while (true) {
    const auto values = values_of(p);
    const bool run = std::any_of(runs.begin(), runs.end(),
                                 [&](const Measured& r) { return same_values(r.values, values); });
    if (!run && !(skip_batch_one && values[batch_axis] == 1)) out.push_back(p);
    std::size_t a = axes.size();
    while (a > 0 && ++p[a - 1] == axes[a - 1].values.size()) p[--a] = 0;
    if (a == 0) break;
  }
  return out;
}

std::optional<Choice> Planner::first_runs(const std::vector<Measured>& runs) const {
  auto cost = [&](const Point& p) {
    double c = 1;
    for (std::size_t a : varying()) {
      double smallest = std::numeric_limits<double>::infinity();
      for (const auto& v : axes[a].values) smallest = std::min(smallest, number(v));
      const double v = number(axes[a].values[p[a]]);
      c *= smallest > 0 ? v / smallest : 1 + v - smallest;
    }
    return c;
  };
  // Per parameter, the values measured so far.
  std::vector<std::set<double>> seen(axes.size());
  for (const auto& r : runs)
    if (r.peak)
      for (std::size_t a = 0; a < axes.size(); ++a) seen[a].insert(r.values[a]);
  std::optional<Choice> best;
  double best_key = std::numeric_limits<double>::infinity();
  for (const Point& p : candidates(runs)) {
    const auto values = values_of(p);
    // The parameter this point gives a new value to that has the fewest; a point that adds to
    // none only counts once every parameter has its three.
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (std::size_t a : varying())
      if (!seen[a].contains(values[a])) fewest = std::min(fewest, seen[a].size());
    if (fewest >= kValuesPerParameter && !covered(runs)) continue;
    // Lexicographic: fewer values first, then cost.
    const double key = static_cast<double>(std::min(fewest, kValuesPerParameter)) * 1e12 + cost(p);
    if (key < best_key) {
      best_key = key;
      best = Choice{p, fewest < kValuesPerParameter ? "a new value, cheapest" : "cheapest", {}};
    }
  }
  return best;
}

std::optional<Choice> Planner::informed(const model::Model& m, const std::vector<Measured>& runs,
                                        const std::vector<std::vector<double>>& fitted,
                                        double cap) const {
  const model::Point target_point = model_point(target);
  const model::SubModel& part = m.part_for(target_point);
  const std::vector<double> t = parameters_of(target);
  // The runs that the target's part was fitted on: the information is about its coefficients.
  std::vector<std::vector<double>> xs;
  std::vector<std::vector<double>> all;
  for (const auto& r : runs)
    if (r.peak) all.push_back(parameters_of(r.values));
  for (const auto& x : fitted) {
    model::Point p;
    for (std::size_t k = 0; k < x.size(); ++k) p.values[m.params[k]] = x[k];
    if (&m.part_for(p) == &part) xs.push_back(x);
  }
  // Distances on each parameter's log scale over its grid, so 2 -> 4 and 32 -> 64 are one step.
  const auto vary = varying();
  std::vector<std::pair<double, double>> spans;
  for (std::size_t a : vary) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& v : axes[a].values) lo = std::min(lo, number(v)), hi = std::max(hi, number(v));
    spans.emplace_back(lo, hi);
  }
  auto unit = [&](std::size_t k, double v) {
    const auto [lo, hi] = spans[k];
    if (lo > 0) return std::log(v / lo) / std::log(hi / lo);
    return (v - lo) / (hi - lo);
  };
  auto spread = [&](const std::vector<double>& x) {
    double nearest = std::numeric_limits<double>::infinity();
    for (const auto& y : all) {
      double d2 = 0;
      for (std::size_t k = 0; k < x.size(); ++k) d2 += std::pow(unit(k, x[k]) - unit(k, y[k]), 2);
      nearest = std::min(nearest, std::sqrt(d2));
    }
    return all.empty() ? 1.0 : nearest;
  };

  std::optional<Choice> best;
  double best_score = -1;
  for (const Point& p : candidates(runs)) {
    const std::vector<double> x = parameters_of(values_of(p));
    const model::Prediction at = m.predict(model_point(values_of(p)));
    if (!(at.upper <= cap)) continue;
    double share = 0;
    if (&m.part_for(model_point(values_of(p))) == &part && !xs.empty()) {
      // The runner-ups too: a point that only helps the favourite's form leaves the others'
      // disagreement at the target, which the bound carries.
      share = variance_share(part.function, xs, t, x);
      for (const auto& r : part.runner_ups) share += variance_share(r, xs, t, x);
      share /= static_cast<double>(1 + part.runner_ups.size());
    }
    const double worth = share + kSpreadWeight * spread(x);
    const double score = worth / std::sqrt(std::max(at.upper, 1.0) / cap);
    if (score > best_score) {
      best_score = score;
      char why[96];
      std::snprintf(why, sizeof why, "%.0f%% of the variance at the target, %.2f from other runs",
                    share * 100, spread(x));
      best = Choice{p, why, at.upper};
    }
  }
  return best;
}

}  // namespace memwatch::cli
