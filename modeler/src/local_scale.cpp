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

constexpr double kFloorShare = 1.0 / 20, kLeastFloor = 1e-12;

}  // namespace

double LocalScale::carried(std::size_t i, double size) const {
  return size_power > 0 && size > 0 && i < sizes.size() && sizes[i] > 0
             ? std::pow(sizes[i] / size, size_power)
             : 1;
}

double LocalScale::floor_at(double size) const {
  if (!(size_power > 0) || errors.empty()) return floor;
  double sum = 0;
  for (std::size_t i = 0; i < errors.size(); ++i) sum += errors[i] * carried(i, size);
  return std::max(sum / static_cast<double>(errors.size()) * kFloorShare, kLeastFloor);
}

double LocalScale::at(std::span<const double> x, double size, std::size_t skip) const {
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
  if (k == 0) return floor_at(size);
  // Ties (a grid has many runs at the same distance) go to the earlier run, so the same model
  // gives the same bound.
  std::partial_sort(by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(k),
                    by_distance.end());
  // Root mean square: one jag among the neighbours widens the bound, as it should.
  double squares = 0;
  for (std::size_t j = 0; j < k; ++j) {
    const std::size_t i = by_distance[j].second;
    squares += std::pow(errors[i] * carried(i, size), 2);
  }
  return std::max(std::sqrt(squares / static_cast<double>(k)), floor_at(size));
}

double size_power_of(std::span<const double> errors, std::span<const double> sizes,
                     std::span<const std::size_t> sides) {
  // An exact fit's errors are rounding, not a size.
  constexpr double kNoError = 1e-9;
  struct Side {
    std::vector<std::pair<double, double>> logs;  // (ln peak, ln |error|)
    double mean_u = 0, mean_v = 0;
  };
  std::vector<Side> by_side;
  for (std::size_t i = 0; i < errors.size() && i < sizes.size() && i < sides.size(); ++i) {
    if (!(errors[i] > kNoError && sizes[i] > 0)) continue;
    if (sides[i] >= by_side.size()) by_side.resize(sides[i] + 1);
    by_side[sides[i]].logs.emplace_back(std::log(sizes[i]), std::log(errors[i]));
  }
  // Each side about its own means: batch 1 misses more and is smaller, which is no slope.
  double uu = 0, uv = 0, spread = 0;
  std::size_t n = 0, groups = 0;
  for (Side& side : by_side) {
    if (side.logs.empty()) continue;
    const auto count = static_cast<double>(side.logs.size());
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& [u, v] : side.logs) {
      side.mean_u += u / count, side.mean_v += v / count;
      lo = std::min(lo, u), hi = std::max(hi, u);
    }
    for (const auto& [u, v] : side.logs)
      uu += (u - side.mean_u) * (u - side.mean_u), uv += (u - side.mean_u) * (v - side.mean_v);
    spread = std::max(spread, hi - lo);
    n += side.logs.size(), ++groups;
  }
  if (n < groups + 6 || spread < std::log(2.0) || !(uu > 0)) return 0;
  const double slope = uv / uu;
  double residual = 0;
  for (const Side& side : by_side)
    for (const auto& [u, v] : side.logs)
      residual += std::pow(v - side.mean_v - slope * (u - side.mean_u), 2);
  // ln|error| scatters by about one unit about its trend, so a dozen runs of relative noise
  // show slopes of +-0.4 by chance: the power taken is the least the runs make likely (two
  // standard errors below the slope's), and where they cannot tell, errors stay relative.
  const double standard_error = std::sqrt(residual / static_cast<double>(n - groups - 1) / uu);
  return std::clamp(-slope - 2 * standard_error, 0.0, 1.0);
}

LocalScale make_local_scale(std::vector<std::vector<double>> points, std::vector<double> errors,
                            std::vector<double> sizes, double size_power, std::size_t apart) {
  LocalScale s;
  s.apart = apart;
  s.size_power = size_power;
  s.sizes = std::move(sizes);
  const double n = static_cast<double>(errors.size());
  s.neighbours =
      std::min(errors.size() > 0 ? errors.size() - 1 : 0,
               std::max<std::size_t>(4, static_cast<std::size_t>(std::lround(std::sqrt(n) / 2))));
  const double mean = n > 0 ? std::accumulate(errors.begin(), errors.end(), 0.0) / n : 0;
  s.floor = std::max(mean * kFloorShare, kLeastFloor);
  s.points = std::move(points);
  s.errors = std::move(errors);
  return s;
}

LocalScale local_scale_of(const Dataset& d, std::span<const double> ratios, std::size_t apart) {
  std::vector<std::vector<double>> points;
  std::vector<double> errors, sizes;
  std::vector<std::size_t> sides;
  for (std::size_t i = 0; i < ratios.size() && i < d.rows.size(); ++i) {
    points.push_back(d.rows[i].x);
    errors.push_back(std::abs(ratios[i]));
    sizes.push_back(d.rows[i].y);
    sides.push_back(apart < d.rows[i].x.size() && d.rows[i].x[apart] <= 1 ? 1 : 0);
  }
  const double power = size_power_of(errors, sizes, sides);
  return make_local_scale(std::move(points), std::move(errors), std::move(sizes), power, apart);
}

}  // namespace memwatch::model
