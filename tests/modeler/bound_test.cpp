// The upper bound: coverage of held-out runs, its width following the local size of the errors,
// its level with too few runs, and its widening off the training range.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "memwatch/model/model.hpp"
#include "synthetic.hpp"

namespace memwatch::model {
namespace {

TEST(Bound, CoversHeldOutRunsAtAboutItsNominalLevel) {
  std::size_t covered = 0, total = 0;
  double level = 0;
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const auto [train, test] = testing::random_split(testing::unet_grid(0.002, seed), 0.7, seed);
    const Model m = fit(train);
    const SubModel& part = m.parts.front();
    EXPECT_EQ(part.bound.method, "jackknife+");
    EXPECT_TRUE(part.bound.enough_runs());
    level = part.bound.level;
    for (const auto& r : test.rows) {
      const Prediction p = m.predict(part, r.x);
      EXPECT_GE(p.upper, p.value);
      covered += r.y <= p.upper;
      ++total;
    }
  }
  const double coverage = static_cast<double>(covered) / static_cast<double>(total);
  // Jackknife+ guarantees 1 - 2 alpha; in practice it sits near 1 - alpha.
  EXPECT_GE(coverage, 1 - 2 * (1 - level)) << covered << " of " << total;
  EXPECT_LT(coverage, 1.0) << "a bound that covers everything is too loose to judge by";
}

// Small runs noisy (3% at dim <= 48), large ones quiet (0.2%): the errors of memory models are
// not one size (a 16^3 volume jags by 10-30%, a 96^3 one by 0.5%).
Dataset noisy_small_runs(unsigned seed) {
  Dataset d = testing::unet_grid(0, seed);
  std::mt19937 rng(seed);
  std::normal_distribution<double> gauss(0, 1);
  for (auto& r : d.rows) r.y *= 1 + (r.x[1] <= 48 ? 0.03 : 0.002) * gauss(rng);
  return d;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

TEST(Bound, IsTightWhereTheRunsAreQuietAndWideWhereTheyAreNoisy) {
  std::size_t covered = 0, total = 0;
  std::vector<double> quiet, noisy, quiet_one_width;
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const auto [train, test] = testing::random_split(noisy_small_runs(seed), 0.7, seed);
    FitOptions one_formula;
    one_formula.split_depth = 0;
    const Model m = fit(train, one_formula);
    const SubModel& part = m.parts.front();
    ASSERT_FALSE(part.bound.scale.empty());
    Bound one_width = part.bound;
    one_width.scale = {};
    for (const auto& r : test.rows) {
      const double upper = m.predict(part, r.x).upper;
      covered += r.y <= upper;
      ++total;
      (r.x[1] <= 48 ? noisy : quiet).push_back((upper - r.y) / r.y);
      if (r.x[1] > 48)
        quiet_one_width.push_back((upper_bound(one_width, part.function, r.x) - r.y) / r.y);
    }
  }
  const double coverage = static_cast<double>(covered) / static_cast<double>(total);
  EXPECT_GE(coverage, 0.9) << covered << " of " << total;
  // 0.2% noise: a 95% bound a few tenths of a percent above the truth, where one width for all
  // runs sits near the noisy runs' 5%.
  EXPECT_LT(median(quiet), 0.01);
  EXPECT_GT(median(quiet_one_width), 3 * median(quiet));
  EXPECT_GT(median(noisy), 3 * median(quiet));
}

// Host memory whose batch-1 runs miss any formula by 15% (LibTorch's slow_conv3d path, as on the
// U-net sweep), the rest by 0.2%, held to one formula (on the U-net sweep no cut pays): each run
// at batch 2 of a volume never run had batch-1 runs among its neighbours, and a bound of 9-19%
// over a prediction within 1%.
TEST(Bound, BatchOneDoesNotWidenTheBoundFromBatchTwoOn) {
  const auto jagged_batch_one = [](const std::string& target) {
    Dataset d = testing::unet_grid(0.002, 3);
    d.target = target;
    std::mt19937 rng(3);
    std::normal_distribution<double> gauss(0, 1);
    for (auto& r : d.rows)
      if (r.x[0] == 1) r.y *= 1 + 0.15 * gauss(rng);
    Dataset train = d, test = d;
    std::erase_if(train.rows, [](const Dataset::Row& r) { return r.x[1] > 96; });
    std::erase_if(test.rows, [](const Dataset::Row& r) { return r.x[1] <= 96; });
    return std::pair{train, test};
  };
  FitOptions one_formula;
  one_formula.split_depth = 0;
  // Median headroom over the truth at batch 1, at batch 2 and from batch 2 on; runs covered.
  struct Headroom {
    double one, two, more;
    std::size_t covered, runs;
  };
  const auto headroom = [&](const std::string& target) {
    const auto [train, test] = jagged_batch_one(target);
    const Model m = fit(train, one_formula);
    std::vector<double> one, two, more;
    std::size_t covered = 0;
    for (const auto& r : test.rows) {
      const double upper = m.predict(m.parts.front(), r.x).upper;
      const double over = (upper - r.y) / r.y;
      (r.x[0] == 1 ? one : more).push_back(over);
      if (r.x[0] == 2) two.push_back(over);
      covered += r.y <= upper;
    }
    return Headroom{median(one), median(two), median(more), covered, test.rows.size()};
  };
  const Headroom host = headroom("host_peak_bytes");
  // A device's batch 1 is no regime of its own (priors.hpp): its neighbourhoods stay one.
  const Headroom device = headroom("device_peak_bytes");
  EXPECT_GE(static_cast<double>(host.covered), 0.95 * static_cast<double>(host.runs));
  EXPECT_LT(host.more, 0.01);
  EXPECT_GT(device.two, 5 * host.two) << "batch 1 beside batch 2 widens its bound";
  EXPECT_GT(host.one, 0.1) << "batch 1's own runs still set its bound";
}

// Host memory misses by bytes of its own (the allocator's rounding, a phase of a few MiB), not by
// a share of the peak: the Python U-net sweep's runs from batch 2 on miss by 2-4 MiB from 150 MiB
// to 7.5 GiB. Carried as shares, the errors of the smaller runs nearby set the bound of the
// larger ones.
Dataset jittered_by_bytes(double mib, unsigned seed) {
  Dataset d = testing::grid(
      {"batch", "dim", "filters"}, {{1, 2, 4, 8}, {16, 32, 48, 64, 80, 96}, {8, 16}},
      [](const std::vector<double>& x) {
        return 1.5e8 + 360 * x[0] * std::pow(x[1], 3) * std::sqrt(x[2]);
      },
      0, seed);
  std::mt19937 rng(seed);
  std::normal_distribution<double> gauss(0, 1);
  for (auto& r : d.rows) r.y += mib * (1 << 20) * gauss(rng);
  return d;
}

// The same bound with errors carried as shares of the peak, as before they were carried by size.
Bound carried_as_shares(Bound b) {
  const auto as_shares = [](LocalScale& scale, std::vector<double>& run_scales) {
    scale.size_power = 0;
    for (std::size_t k = 0; k < run_scales.size(); ++k)
      run_scales[k] = scale.at(scale.points[k], scale.sizes[k], /*skip=*/k);
  };
  as_shares(b.scale, b.run_scales);
  for (CorrectionScores& scores : b.corrected) {
    as_shares(scores.carried.scale, scores.carried.run_scales);
    as_shares(scores.line.scale, scores.line.run_scales);
  }
  return b;
}

TEST(Bound, ErrorsOfAFewMiBAreCarriedAsBytesToTheLargerRuns) {
  std::size_t covered = 0, total = 0;
  std::vector<double> large, large_as_shares;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    const auto [train, test] = testing::random_split(jittered_by_bytes(3, seed), 0.7, seed);
    const Model m = fit(train);
    const SubModel& part = m.parts.front();
    // 3 MiB is 2% of 150 MiB and 0.04% of 7.5 GiB: a power near 1, taken toward 0 on 33 runs.
    EXPECT_GT(part.bound.scale.size_power, 0.2);
    const Bound shares = carried_as_shares(part.bound);
    for (const auto& r : test.rows) {
      const double upper = m.predict(part, r.x).upper;
      covered += r.y <= upper;
      ++total;
      if (r.x[1] < 64) continue;
      large.push_back((upper - r.y) / r.y);
      large_as_shares.push_back((upper_bound(shares, part.function, r.x, part.slices) - r.y) / r.y);
    }
  }
  EXPECT_GE(static_cast<double>(covered), 0.95 * static_cast<double>(total))
      << covered << " of " << total;
  // Measured: 0.61% carried by size, 0.89% as shares.
  EXPECT_LT(median(large), 0.8 * median(large_as_shares))
      << median(large) << " against " << median(large_as_shares);
}

// Errors that are a share of the peak (cuDNN's workspace, the caching allocator's blocks) keep
// their share: a dozen runs of relative noise show no power, though ln|error| scatters by about
// one unit and a slope of -0.4 turns up by chance.
TEST(Bound, ErrorsThatAreAShareOfThePeakStayShares) {
  for (unsigned seed = 1; seed <= 8; ++seed) {
    const Dataset d = testing::grid(
        {"batch", "dim"}, {{1, 2, 3, 4}, {16, 32, 48}},
        [](const std::vector<double>& x) { return 7e7 + 3.3e6 * x[0] * x[1] * x[1] * x[1] / 256; },
        0.03, seed);
    std::vector<double> errors, sizes;
    for (const auto& r : d.rows) {
      errors.push_back(std::abs(r.y / (7e7 + 3.3e6 * r.x[0] * std::pow(r.x[1], 3) / 256) - 1));
      sizes.push_back(r.y);
    }
    const std::vector<std::size_t> one_side(errors.size(), 0);
    EXPECT_EQ(size_power_of(errors, sizes, one_side), 0) << "seed " << seed;
  }
}

TEST(Bound, SaysSoWhenThereAreTooFewRuns) {
  Dataset d;
  d.params = {"batch"};
  for (double b = 1; b <= 10; ++b) d.add({b}, 1e6 + 1e5 * b * (1 + 0.01 * std::sin(b)));
  const Model m = fit(d);
  const Bound& bound = m.parts.front().bound;
  EXPECT_FALSE(bound.enough_runs());
  EXPECT_EQ(bound.method, "jackknife+ max");
  EXPECT_DOUBLE_EQ(bound.level, 10.0 / 11.0);
  EXPECT_GT(bound.runs_needed(), 10u);
  // The runs needed are the fewest for which the order statistic exists.
  EXPECT_LE(std::ceil(bound.requested_level * static_cast<double>(bound.runs_needed() + 1)),
            static_cast<double>(bound.runs_needed()));
  EXPECT_NE(bound.describe().find("too few runs"), std::string::npos);
  const std::vector<double> x{5};
  EXPECT_GE(m.predict(m.parts.front(), x).upper, m.predict(m.parts.front(), x).value);
}

TEST(Bound, WidensByTheRunnerUpsOffTheTrainingRange) {
  const Dataset d = testing::unet_grid(0.002, 4);
  const Model m = fit(d);
  const SubModel& part = m.parts.front();
  ASSERT_FALSE(part.runner_ups.empty());
  const std::vector<double> far{64, 400, 64, 7};
  const Prediction p = m.predict(part, far);
  EXPECT_TRUE(p.extrapolating);
  double highest = p.value;
  for (const auto& r : part.runner_ups) highest = std::max(highest, r.evaluate(far));
  // Beside the runner-ups, the extrapolation check's widening (extrapolation_test.cpp).
  const double checked = p.value * part.bound.extrapolation.at(part.function, far).widening;
  EXPECT_NEAR(p.upper, upper_bound(part.bound, part.function, far) + highest - p.value + checked,
              1e-9 * p.upper);
}

}  // namespace
}  // namespace memwatch::model
