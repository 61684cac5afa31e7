// The upper bound: coverage of held-out runs, its level with too few runs, and its widening off
// the training range.
#include <gtest/gtest.h>

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
  EXPECT_NEAR(p.upper, upper_bound(part.bound, part.function, far) + highest - p.value,
              1e-9 * p.upper);
}

}  // namespace
}  // namespace memwatch::model
