// The largest value that fits, from runs of a known law: the true largest value or one below
// (the bound sits above the truth), never above it.
#include "memwatch/model/largest_fitting.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "synthetic.hpp"

namespace memwatch::model {
namespace {

constexpr double kConstant = 2e8, kPerVoxel = 1000;

double affine_law(const std::vector<double>& x) {
  return kConstant + kPerVoxel * x[0] * x[1] * x[1] * x[1];
}

Dataset affine_runs(double noise, unsigned seed) {
  return testing::grid({"batch", "dim"}, {{1, 2, 4, 8, 12, 16, 24, 32}, {16, 24, 32, 48, 64}},
                       affine_law, noise, seed);
}

// The capacity at which `batches` (a fraction included) fit at dim 64, by the law itself.
double capacity_for(double batches) {
  return kConstant + kPerVoxel * batches * std::pow(64, 3);
}

TEST(LargestFitting, TrueLargestOrOneBelowNeverAbove) {
  for (unsigned seed : {1u, 2u, 3u})
    for (double noise : {0.001, 0.005}) {
      const Model m = fit(affine_runs(noise, seed));
      // Inside the runs' batches and past them (extrapolating, where the bound widens).
      for (double batches : {5.5, 13.3, 20.9, 27.5, 40.6, 57.8}) {
        const double truth = std::floor(batches);
        const Fitting got =
            largest_fitting(m, Point{{{"dim", 64}}, {}}, "batch", capacity_for(batches));
        EXPECT_LE(got.value, truth) << "seed " << seed << " noise " << noise << " " << batches;
        EXPECT_GE(got.value, truth - 1) << "seed " << seed << " noise " << noise << " " << batches;
        EXPECT_LE(got.at.upper, capacity_for(batches));
        EXPECT_EQ(got.at.upper, m.predict(Point{{{"batch", got.value}, {"dim", 64}}, {}}).upper);
      }
    }
}

TEST(LargestFitting, NothingFitsGivesZero) {
  const Model m = fit(affine_runs(0.002, 4));
  const Fitting got = largest_fitting(m, Point{{{"dim", 64}}, {}}, "batch", kConstant / 2);
  EXPECT_EQ(got.value, 0);
}

TEST(LargestFitting, SearchesTheParametersStep) {
  const Model m = fit(affine_runs(0.002, 5));
  const FitSearch by8{.step = 8};
  const Fitting got =
      largest_fitting(m, Point{{{"dim", 64}}, {}}, "batch", capacity_for(30.5), by8);
  EXPECT_EQ(got.value, 24);
}

TEST(LargestFitting, ABoundThatDipsCannotLetALargerValueThrough) {
  // A bound that fails at batch 3 and fits again from 4 on (as a regime's edge can make it):
  // the answer is 2, the largest value below which everything fits.
  Model m;
  m.target = "value";
  m.params = {"batch"};
  SubModel low, high;
  low.domain = {Cut{0, 3, false}};
  high.domain = {Cut{0, 3, true}};
  low.function.constant = 100;
  low.function.coefficients = {10};
  low.function.features = {CompoundTerm{{SimpleTerm{0, 2, 0}}}};
  high.function.constant = 0;
  high.function.coefficients = {1};
  high.function.features = {CompoundTerm{{SimpleTerm{0, 1, 0}}}};
  low.range = high.range = {{1, 100}};
  m.parts = {low, high};
  EXPECT_EQ(largest_fitting(m, Point{}, "batch", 150).value, 2);
}

TEST(LargestFitting, RefusesAnUnknownParameter) {
  const Model m = fit(affine_runs(0.002, 6));
  EXPECT_THROW((void)largest_fitting(m, Point{{{"dim", 64}}, {}}, "filters", 1e9),
               std::invalid_argument);
}

}  // namespace
}  // namespace memwatch::model
