#include "memwatch/model/local_scale.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace memwatch::model {

namespace {

// A parameter is compared on a log scale when all its values are positive (sizes, batches),
// linearly otherwise, and in units of its training range so no parameter dominates by its unit.
struct Axis {
  bool log = true;
  double lo = 0, span = 0;
  [[nodiscard]] double coordinate(double v) const {
    const double u = log ? std::log(std::max(v, 1e-300)) : v;
    return span > 0 ? (u - lo) / span : 0;
  }
};

std::vector<Axis> axes_of(const std::vector<std::vector<double>>& points) {
  std::vector<Axis> axes(points.empty() ? 0 : points.front().size());
  for (std::size_t p = 0; p < axes.size(); ++p) {
    for (const auto& x : points) axes[p].log = axes[p].log && x[p] > 0;
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& x : points) {
      const double u = axes[p].log ? std::log(x[p]) : x[p];
      lo = std::min(lo, u), hi = std::max(hi, u);
    }
    axes[p].lo = lo;
    axes[p].span = hi - lo;
  }
  return axes;
}

// Batch 1 and batches from 2 on miss in different ways: on the U-net sweep a run at batch 1 by
// 5-30% (slow_conv3d's column buffers, a kernel's path per layer), one from batch 2 on by under
// 1% at the same volume. A neighbourhood reaching across gave the runs at batch 2 of a volume
// never run a bound 8-19% over a prediction within 0.8%.
constexpr double kOtherSide = 1e6;

}  // namespace

double LocalScale::at(std::span<const double> x, std::size_t skip) const {
  const std::vector<Axis> axes = axes_of(points);
  std::vector<std::pair<double, std::size_t>> by_distance;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i == skip) continue;
    double d2 = 0;
    for (std::size_t p = 0; p < axes.size() && p < x.size(); ++p) {
      const double d = axes[p].coordinate(x[p]) - axes[p].coordinate(points[i][p]);
      d2 += d * d;
    }
    // Coordinates lie in 0..1 (a point past the runs a few units out): no run on the same
    // side is this far.
    if (apart < x.size() && (x[apart] <= 1) != (points[i][apart] <= 1)) d2 += kOtherSide;
    by_distance.emplace_back(d2, i);
  }
  const std::size_t k = std::min(neighbours, by_distance.size());
  if (k == 0) return floor;
  // Ties (a grid has many runs at the same distance) go to the earlier run, so the same model
  // gives the same bound.
  std::partial_sort(by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(k),
                    by_distance.end());
  // Root mean square: one jag among the neighbours widens the bound, as it should.
  double squares = 0;
  for (std::size_t j = 0; j < k; ++j) squares += std::pow(errors[by_distance[j].second], 2);
  return std::max(std::sqrt(squares / static_cast<double>(k)), floor);
}

LocalScale make_local_scale(std::vector<std::vector<double>> points, std::vector<double> errors,
                            std::size_t apart) {
  LocalScale s;
  s.apart = apart;
  const double n = static_cast<double>(errors.size());
  s.neighbours =
      std::min(errors.size() > 0 ? errors.size() - 1 : 0,
               std::max<std::size_t>(4, static_cast<std::size_t>(std::lround(std::sqrt(n) / 2))));
  const double mean = n > 0 ? std::accumulate(errors.begin(), errors.end(), 0.0) / n : 0;
  s.floor = std::max(mean / 20, 1e-12);
  s.points = std::move(points);
  s.errors = std::move(errors);
  return s;
}

LocalScale local_scale_of(const Dataset& d, std::span<const double> ratios, std::size_t apart) {
  std::vector<std::vector<double>> points;
  std::vector<double> errors;
  for (std::size_t i = 0; i < ratios.size() && i < d.rows.size(); ++i) {
    points.push_back(d.rows[i].x);
    errors.push_back(std::abs(ratios[i]));
  }
  return make_local_scale(std::move(points), std::move(errors), apart);
}

}  // namespace memwatch::model
