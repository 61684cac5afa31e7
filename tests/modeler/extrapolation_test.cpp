// The bound past the runs: a slope that grows with the volume beyond what the runs show is
// found by predicting the runs at the largest volume from the others, and widens the bound at a
// larger volume; an exact law keeps it tight; a parameter with too few values to check leaves
// the bound past it unvouched, but for the batch, which the priors hold affine.
#include "memwatch/model/extrapolation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "memwatch/model/model.hpp"
#include "memwatch/model/model_json.hpp"
#include "memwatch/model/table_parse.hpp"
#include "reference_sweep.hpp"
#include "synthetic.hpp"

namespace memwatch::model {
namespace {

// unet3d-train at levels 3, F=8 on CPU: the bytes per sample-voxel grow from 560 at 16^3 to
// 628 at 64^3 (measured); here they grow by 4% per doubling of the edge.
double growing_slope(const std::vector<double>& x) {
  const double batch = x[0], dim = x[1];
  return 7e7 + 560 * batch * std::pow(dim, 3) * std::pow(dim / 16, 0.06);
}

double exact_law(const std::vector<double>& x) {
  return 2e8 + 1000 * x[0] * std::pow(x[1], 3);
}

const ParamCheck& check_of(const SubModel& part, std::size_t param) {
  for (const auto& c : part.bound.extrapolation.params)
    if (c.param == param) return c;
  throw std::logic_error("no check of that parameter");
}

TEST(Extrapolation, ASlopeThatGrowsPastTheRunsWidensTheBoundThere) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const Dataset d =
        testing::grid({"batch", "dim"}, {{2, 4, 8}, {16, 24, 32, 48}}, growing_slope, 0.002, seed);
    const Model m = fit(d);
    ASSERT_EQ(m.parts.size(), 1u);
    const ParamCheck& dim = check_of(m.parts.front(), 1);
    EXPECT_GT(dim.held_out, 0u);
    EXPECT_GT(dim.miss_per_reach, 0) << "seed " << seed;

    const Point far{{{"batch", 8}, {"dim", 128}}, {}};
    const Prediction p = m.predict(far);
    const double truth = growing_slope({8, 128});
    EXPECT_LT(p.value, truth) << "the formula alone misses the growth";
    EXPECT_GE(p.upper, truth) << "seed " << seed;
    EXPECT_NEAR(p.reach_ratio, std::pow(128.0 / 48, 3), 0.3);

    Model unchecked = m;
    unchecked.parts.front().bound.extrapolation = {};
    EXPECT_LT(unchecked.predict(far).upper, p.upper);
  }
}

// The GPU sweep's device peaks (bench/data/unet3d-py-cuda.csv) jag from one volume to the next,
// as cuDNN's algorithms and the caching allocator's blocks change: about 10% under the law of the
// smaller volumes at 96^3 and 8% over it at 128^3, back on it at 192^3. Here the law is exact but
// for those two jags, and 192^3 lies on it.
double jagged(const std::vector<double>& x) {
  const double batch = x[0], dim = x[1];
  const double jag = dim == 96 ? 0.90 : dim == 128 ? 1.08 : 1;
  return 2e7 + 97 * 16 * batch * std::pow(dim, 3) * jag;
}

TEST(Extrapolation, AJagAtTheLargestVolumeIsNotReadAsGrowth) {
  const Dataset d =
      testing::grid({"batch", "dim"}, {{1, 2, 4, 8}, {32, 64, 96, 128}}, jagged, 0.002, 5);
  const Model m = fit(d);
  ASSERT_EQ(m.parts.size(), 1u);
  const ParamCheck& dim = check_of(m.parts.front(), 1);
  EXPECT_GT(dim.held_out, 0u);
  EXPECT_GT(dim.held_before, 0u);
  EXPECT_LT(dim.miss_per_reach, 0.01) << m.describe();
  const Point far{{{"batch", 8}, {"dim", 192}}, {}};
  const Prediction p = m.predict(far);
  EXPECT_GE(p.upper, jagged({8, 192}));
  EXPECT_LT(p.upper, 1.3 * p.value) << m.describe();
}

TEST(Extrapolation, AnExactLawPastTheRunsKeepsItsBoundTight) {
  const Dataset d =
      testing::grid({"batch", "dim"}, {{1, 2, 4, 8}, {16, 24, 32, 48}}, exact_law, 0.001, 7);
  const Model m = fit(d);
  const Prediction p = m.predict(Point{{{"batch", 8}, {"dim", 96}}, {}});
  EXPECT_NEAR(p.value / exact_law({8, 96}), 1, 0.005);
  EXPECT_LT(m.parts.front()
                .bound.extrapolation.at(m.parts.front().function, std::vector<double>{8, 96})
                .widening,
            0.01);
  EXPECT_TRUE(p.vouched);
}

TEST(Extrapolation, TooFewValuesToCheckLeaveTheBoundPastThemUnvouchedButTheBatch) {
  const Dataset d = testing::grid({"batch", "dim"}, {{1, 2, 4, 8}, {16, 32}}, exact_law, 0.001, 3);
  const Model m = fit(d);
  EXPECT_EQ(check_of(m.parts.back(), 1).held_out, 0u);
  const Prediction far_volume = m.predict(Point{{{"batch", 4}, {"dim", 64}}, {}});
  EXPECT_TRUE(far_volume.extrapolating);
  EXPECT_FALSE(far_volume.vouched);
  EXPECT_NE(extrapolation_note(far_volume).find("not vouched"), std::string::npos);
  const Prediction far_batch = m.predict(Point{{{"batch", 64}, {"dim", 32}}, {}});
  EXPECT_TRUE(far_batch.vouched);
  EXPECT_EQ(extrapolation_note(m.predict(Point{{{"batch", 4}, {"dim", 24}}, {}})), "");
}

// Levels 4 and 5 only, the weights (4^levels) a fraction of a percent of the peak: the formula
// barely grows along levels, and without a check that says nothing of levels 7, where the weights
// are 16 times those at 5. Not vouched there; at levels 5, and past the batch, it is.
TEST(Extrapolation, AnUncheckedParameterVouchesNoFurtherThanItsOwnRatio) {
  const Dataset d = testing::grid(
      {"batch", "filters", "levels"}, {{1, 2, 4, 8}, {8, 16, 32}, {4, 5}},
      [](const std::vector<double>& x) {
        return 2e8 + 1000 * x[0] * x[1] * std::pow(64, 3) + 50 * x[1] * x[1] * std::pow(4, x[2]);
      },
      0.001, 6);
  const Model m = fit(d);
  EXPECT_EQ(check_of(m.parts.back(), 2).held_out, 0u);
  const Prediction deeper = m.predict(Point{{{"batch", 4}, {"filters", 16}, {"levels", 7}}, {}});
  EXPECT_LT(deeper.reach_ratio, std::exp(kMinReach)) << "the formula's own reach is short";
  EXPECT_FALSE(deeper.vouched) << m.describe();
  EXPECT_NE(extrapolation_note(deeper).find("not vouched"), std::string::npos);
  EXPECT_TRUE(m.predict(Point{{{"batch", 4}, {"filters", 16}, {"levels", 5}}, {}}).vouched);
  EXPECT_TRUE(m.predict(Point{{{"batch", 64}, {"filters", 16}, {"levels", 5}}, {}}).vouched);
}

// An MLP's shape (measured on a PyTorch MLP, 1024 inputs, two hidden layers, Adam): the weights
// and their optimizer state, 16 bytes a weight, and a heap whose slack holds the activations of
// batches 64-512 nearly whole, so the batch moves the peak by 2% across the runs. Read as the
// batch's bytes, that slope is not one to carry 8x past the runs (the real trainer's peak at
// batch 4096 was 25% over the prediction and its bound): the bound there is not vouched for,
// within a step past the runs it is, and a saved model says the same.
TEST(Extrapolation, AnAffineSlopeTheRunsBarelyShowVouchesForNoBatchFarPastThem) {
  const Dataset d = testing::grid(
      {"batch", "hidden"}, {{64, 128, 256, 512}, {256, 512, 1024}},
      [](const std::vector<double>& x) {
        return 1e8 + 16 * x[1] * x[1] + 25000 * x[1] + 4 * x[0] * x[1];
      },
      0.001, 5);
  const Model m = fit(d);
  EXPECT_FALSE(check_of(m.parts.back(), 0).slope_shown) << m.describe();
  const Point far{{{"batch", 4096}, {"hidden", 1024}}, {}};
  EXPECT_FALSE(m.predict(far).vouched) << m.describe();
  EXPECT_NE(extrapolation_note(m.predict(far)).find("not vouched"), std::string::npos);
  EXPECT_TRUE(m.predict(Point{{{"batch", 600}, {"hidden", 1024}}, {}}).vouched);
  EXPECT_FALSE(model_from_json(to_json(m)).predict(far).vouched);
}

// A parameter the runs never varied is in no term: the formula does not grow along it at all,
// and a point at another value of it is not vouched for, and says so.
TEST(Extrapolation, AParameterTheRunsNeverVariedVouchesForNoOtherValue) {
  const Dataset d = testing::grid({"batch", "dim"}, {{1, 2, 4, 8}, {32}}, exact_law, 0.001, 7);
  const Model m = fit(d);
  const Prediction larger = m.predict(Point{{{"batch", 2}, {"dim", 64}}, {}});
  EXPECT_LE(larger.reach_ratio, 1.0);
  EXPECT_FALSE(larger.vouched);
  EXPECT_NE(extrapolation_note(larger).find("not vouched"), std::string::npos);
  EXPECT_TRUE(m.predict(Point{{{"batch", 16}, {"dim", 32}}, {}}).vouched);
}

// The Python trainer's sweep (bench/data/unet3d-py-cpu.csv) fitted on its runs at 16^3 and 32^3,
// asked at 64^3: dim cannot be checked (two values) and the batch's rate is 0. The runs at F=8,
// batch 4 and 8 lie 6.5% and 7.2% above the prediction; widened by nothing they were 0.4% and
// 1.1% above the bound.
TEST(Extrapolation, AnUncheckedVolumeIsWidenedByTheFormulasOwnError) {
  const Dataset all = testing::reference_sweep("unet3d-py-cpu");
  const auto dim = static_cast<std::size_t>(std::find(all.params.begin(), all.params.end(), "dim") -
                                            all.params.begin());
  ASSERT_LT(dim, all.params.size());
  Dataset small = all;
  small.rows.clear();
  std::vector<Dataset::Row> far;
  for (const auto& r : all.rows) {
    if (r.x[dim] <= 32) small.rows.push_back(r);
    if (r.x[dim] == 64) far.push_back(r);
  }
  ASSERT_EQ(far.size(), 8u);
  const Model m = fit(small);
  for (const SubModel& part : m.parts) EXPECT_EQ(check_of(part, dim).held_out, 0u);
  for (const auto& r : far) {
    Point at;
    for (std::size_t p = 0; p < all.params.size(); ++p) at.values[all.params[p]] = r.x[p];
    const Prediction p = m.predict(at);
    EXPECT_GE(p.upper, r.y) << m.describe();
    EXPECT_FALSE(p.vouched);
  }
}

TEST(Extrapolation, ASavedModelKeepsItsChecks) {
  const Dataset d =
      testing::grid({"batch", "dim"}, {{2, 4, 8}, {16, 24, 32, 48}}, growing_slope, 0.002, 1);
  const Model m = fit(d);
  const Model back = model_from_json(to_json(m));
  const Point far{{{"batch", 8}, {"dim", 128}}, {}};
  EXPECT_DOUBLE_EQ(back.predict(far).upper, m.predict(far).upper);
  EXPECT_EQ(back.predict(far).vouched, m.predict(far).vouched);
}

}  // namespace
}  // namespace memwatch::model
