#include "memwatch/model/extrapolation.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "memwatch/model/hypothesis.hpp"
#include "memwatch/model/local_scale.hpp"

namespace memwatch::model {

namespace {

double variable_part(const Function& f, std::span<const double> x) {
  return f.evaluate(x) - f.constant;
}

// ln(v(x) / v(x with parameter p at `from`)); 0 where either is not positive or x is not past.
double reach_along(const Function& f, std::span<const double> x, std::size_t p, double from) {
  if (!(x[p] > from)) return 0;
  std::vector<double> back(x.begin(), x.end());
  back[p] = from;
  const double there = variable_part(f, x), before = variable_part(f, back);
  return there > before && before > 0 ? std::log(there / before) : 0;
}

ParamCheck check_param(const Dataset& d, const Function& f, std::size_t p, bool nonnegative,
                       Loss loss) {
  ParamCheck check{.param = p};
  std::set<double> values;
  for (const auto& row : d.rows) values.insert(row.x[p]);
  check.top = values.empty() ? 0 : *values.rbegin();
  if (values.size() < 3) return check;
  const double below = *std::next(values.rbegin());
  Dataset rest;
  rest.params = d.params;
  rest.target = d.target;
  std::vector<const Dataset::Row*> held;
  for (const auto& row : d.rows) {
    if (row.x[p] == check.top)
      held.push_back(&row);
    else
      rest.rows.push_back(row);
  }
  if (rest.rows.size() < f.features.size() + 2) return check;
  auto refit = fit_hypothesis(rest, f.features, nonnegative, /*with_loo_shifts=*/false, loss);
  if (!refit && loss != Loss::squared) refit = fit_hypothesis(rest, f.features, nonnegative);
  if (!refit) return check;
  const Function& g = refit->function;
  // The refit's own leave-one-out errors near a held-out run: the part of its miss the bound
  // covers there already, not the growth past the runs.
  std::vector<std::vector<double>> points;
  std::vector<double> errors;
  for (std::size_t i = 0; i < rest.rows.size(); ++i) {
    const double e = refit->fit.loo_residuals[static_cast<Eigen::Index>(i)];
    points.push_back(rest.rows[i].x);
    errors.push_back(std::abs(e / (1 - e)));
  }
  const LocalScale jags = make_local_scale(std::move(points), std::move(errors));
  std::vector<double> rates;
  for (const Dataset::Row* row : held) {
    const double reach = reach_along(g, row->x, p, below);
    if (reach < kMinReach) continue;
    const double predicted = g.evaluate(row->x);
    const double miss = (row->y - predicted) / predicted;  // > 0: the run needed more
    // Past the runs the variable part is most of a peak: its own miss is what grows there.
    const double growth =
        std::max(0.0, miss - jags.at(row->x)) * predicted / variable_part(g, row->x);
    rates.push_back(growth / reach);
    check.checked_reach = std::max(check.checked_reach, reach);
  }
  // The upper quartile: a slope that grows shows in most held-out runs (the larger ones most),
  // a jag in one; with four held-out runs or fewer it is the worst.
  check.held_out = rates.size();
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end());
    const auto rank = static_cast<std::size_t>(std::ceil(0.75 * static_cast<double>(rates.size())));
    check.miss_per_reach = rates[rank - 1];
  }
  return check;
}

}  // namespace

double ExtrapolationCheck::widening(const Function& f, std::span<const double> x) const {
  double largest_rate = 0;
  for (const auto& c : params) largest_rate = std::max(largest_rate, c.miss_per_reach);
  double widening = 0;
  for (const auto& c : params) {
    if (c.param >= x.size()) continue;
    const double rate = c.held_out > 0 ? c.miss_per_reach : largest_rate;
    widening += rate * reach_along(f, x, c.param, c.top);
  }
  const double value = f.evaluate(x);
  return value > 0 ? widening * std::max(0.0, variable_part(f, x)) / value : 0;
}

double ExtrapolationCheck::reach(const Function& f, std::span<const double> x) const {
  double total = 0;
  for (const auto& c : params)
    if (c.param < x.size()) total += reach_along(f, x, c.param, c.top);
  return total;
}

bool ExtrapolationCheck::vouches(const Function& f, std::span<const double> x) const {
  for (const auto& c : params)
    if (!c.affine && c.param < x.size() &&
        reach_along(f, x, c.param, c.top) > std::max(2 * c.checked_reach, kMinReach))
      return false;
  return true;
}

ExtrapolationCheck check_extrapolation(const Dataset& d, const Function& f, bool nonnegative,
                                       Loss loss) {
  ExtrapolationCheck check;
  if (f.features.empty()) return check;
  for (std::size_t p = 0; p < d.params.size(); ++p)
    check.params.push_back(check_param(d, f, p, nonnegative, loss));
  return check;
}

}  // namespace memwatch::model
