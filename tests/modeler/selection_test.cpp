// Model selection with few runs: from 8-12 noisy runs the fit must give back a plausible law
// (affine in batch, integer powers of the volume's edge, non-decreasing), not a form that fits
// the noise and explodes when asked about larger runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "memwatch/model/model.hpp"
#include "memwatch/model/table_parse.hpp"
#include "reference_sweep.hpp"
#include "synthetic.hpp"

namespace memwatch::model {
namespace {

using testing::grid;

// The demo's shape: a constant, a workspace in the volume, activations per sample in the
// volume (158.75 MiB a sample at dim 64 is what the demo's trainer measured).
double demo_law(const std::vector<double>& x) {
  const double batch = x[0], dim = x[1];
  return 6e7 + 150 * dim * dim * dim + 635 * batch * dim * dim * dim;
}

// Largest exponent of parameter `param` over the function's terms (GP features count as 9).
double degree_in(const Function& f, std::size_t param) {
  double most = 0;
  for (const auto& feature : f.features) {
    if (const auto* t = std::get_if<CompoundTerm>(&feature)) {
      for (const auto& s : t->factors)
        if (s.param == param) most = std::max(most, s.exponent + s.log_exponent);
    } else {
      most = 9;
    }
  }
  return most;
}

TEST(Selection, TheDemosTwelveRunsExtrapolateToBatch32AtDim64) {
  for (unsigned seed = 1; seed <= 8; ++seed) {
    const Dataset d = grid({"batch", "dim"}, {{1, 2, 3, 4}, {16, 32, 48}}, demo_law, 0.005, seed);
    const Model m = fit(d);
    const Point far{{{"batch", 32}, {"dim", 64}}, {}};
    const double truth = demo_law({32, 64});
    EXPECT_NEAR(m.predict(far).value / truth, 1, 0.05) << "seed " << seed << "\n" << m.describe();
    EXPECT_GE(m.predict(far).upper, 0.99 * truth) << "seed " << seed << "\n" << m.describe();
    for (const auto& part : m.parts) EXPECT_LE(degree_in(part.function, 0), 1) << m.describe();
  }
}

// Every exponent of a spatial edge (dim) is whole, batch's is at most 1.
void expect_plausible(const Model& m) {
  for (const auto& part : m.parts) {
    EXPECT_LE(degree_in(part.function, 0), 1) << m.describe();
    for (const auto& feature : part.function.features)
      if (const auto* t = std::get_if<CompoundTerm>(&feature))
        for (const auto& s : t->factors)
          if (m.params[s.param] == "dim") {
            EXPECT_EQ(s.exponent, std::floor(s.exponent)) << m.describe();
          }
  }
}

struct Law {
  const char* name;
  std::vector<std::string> params;
  std::vector<std::vector<double>> values;  // 8-12 runs
  std::function<double(const std::vector<double>&)> truth;
  std::vector<double> far;  // a point past the runs, where the truth is asked
};

TEST(Selection, KnownLawsFromAFewRunsWithOnePercentNoiseComeBackPlausible) {
  const Law laws[] = {
      {"activations",
       {"batch", "dim"},
       {{1, 2, 4, 8}, {16, 32, 64}},
       [](const auto& x) { return 2e8 + 900 * x[0] * x[1] * x[1] * x[1]; },
       {32, 96}},
      {"a workspace and a plane's activations",
       {"batch", "dim"},
       {{1, 2, 4}, {16, 32, 48, 64}},
       [](const auto& x) { return 1e8 + 600 * x[1] * x[1] * x[1] + 3000 * x[0] * x[1] * x[1]; },
       {16, 96}},
      {"a plane's activations",
       {"batch", "dim"},
       {{2, 4, 6, 8}, {64, 128, 256}},
       [](const auto& x) { return 1e8 + 2000 * x[0] * x[1] * x[1]; },
       {32, 512}},
      {"batch plays no part",
       {"batch", "dim"},
       {{1, 2, 4, 8}, {32, 48, 64}},
       [](const auto& x) { return 1e8 + 2000 * x[1] * x[1] * x[1]; },
       {64, 128}},
  };

  for (const auto& law : laws)
    for (unsigned seed = 1; seed <= 6; ++seed) {
      const Dataset d = grid(law.params, law.values, law.truth, 0.01, seed);
      ASSERT_GE(d.rows.size(), 8u);
      ASSERT_LE(d.rows.size(), 12u);
      const Model m = fit(d);
      SCOPED_TRACE(std::string(law.name) + ", seed " + std::to_string(seed));
      expect_plausible(m);
      const double truth = law.truth(law.far);
      const double got = m.predict(m.parts.back(), law.far).value;
      EXPECT_NEAR(got / truth, 1, 0.15) << m.describe();
    }
}

TEST(Selection, DataThatClearlyGrowFasterThanTheBatchOverruleThePrior) {
  // Attention-like: a term in batch^2 that no affine form follows, at low noise, on 21 runs
  // (fewer than 20 never overrule the priors).
  const Dataset d = grid(
      {"batch", "dim"}, {{1, 2, 3, 4, 6, 8, 12}, {16, 32, 48}},
      [](const auto& x) { return 1e8 + 4e5 * x[0] * x[0] * x[1]; }, 0.001, 3);
  const Model m = fit(d);
  EXPECT_EQ(m.parts.front().search.find("priors overruled") != std::string::npos, true)
      << m.describe();
  EXPECT_EQ(degree_in(m.parts.front().function, 0), 2) << m.describe();
  FitOptions dogmatic;
  dogmatic.priors.overwhelm = 0;
  EXPECT_GT(fit(d, dogmatic).parts.front().loo_mape, 2 * m.parts.front().loo_mape);
}

TEST(Selection, PriorsRefuseDecreasingAndNonAffineForms) {
  const std::vector<std::string> params{"batch", "dim"};
  const std::vector<std::pair<double, double>> ranges{{1, 4}, {16, 48}};
  const Priors priors;
  Function affine;
  affine.constant = 1e6;
  affine.coefficients = {10, 3};
  affine.features = {CompoundTerm{{{0, 1, 0}, {1, 3, 0}}}, CompoundTerm{{{1, 3, 0}}}};
  EXPECT_TRUE(respects_priors(affine, params, ranges, priors));
  Function squared = affine;
  squared.features[0] = CompoundTerm{{{0, 2, 0}, {1, 3, 0}}};
  EXPECT_FALSE(respects_priors(squared, params, ranges, priors));
  // Falls past dim 48 (a negative term that takes over off the runs): not a memory law.
  Function falling = affine;
  falling.coefficients = {10, -0.001};
  falling.features[1] = CompoundTerm{{{1, 5, 0}}};
  EXPECT_FALSE(respects_priors(falling, params, ranges, priors));
  Priors off;
  off.enabled = false;
  EXPECT_TRUE(respects_priors(falling, params, ranges, off));
}

TEST(Selection, StatedAxesSetAParametersDegreeAndRequireItsTopPower) {
  const std::vector<double> exponents{0, 0.5, 1, 1.5, 2, 3};
  Priors stated;
  stated.axes = {{"pd", 1}, {"dim", 3}};
  const auto shaped = prior_exponents({"batch", "pd", "dim"}, exponents, stated);
  EXPECT_EQ(shaped[1], (std::vector<double>{0, 1}));
  EXPECT_EQ(shaped[2], (std::vector<double>{0, 1, 2, 3}));

  const std::vector<std::string> params{"batch", "dim"};
  const std::vector<std::pair<double, double>> ranges{{1, 4}, {16, 48}};
  Function planes;  // activations in dim^2 only: fine unless dim is stated to span 3 axes
  planes.constant = 1e6;
  planes.coefficients = {10};
  planes.features = {CompoundTerm{{{0, 1, 0}, {1, 2, 0}}}};
  EXPECT_TRUE(respects_priors(planes, params, ranges, Priors{}));
  Priors cube;
  cube.axes = {{"dim", 3}};
  EXPECT_FALSE(respects_priors(planes, params, ranges, cube));
  Function voxels = planes;
  voxels.features = {CompoundTerm{{{0, 1, 0}, {1, 3, 0}}}};
  EXPECT_TRUE(respects_priors(voxels, params, ranges, cube));
  // A dim the runs never vary requires nothing of it.
  EXPECT_TRUE(respects_priors(planes, params, {{1, 4}, {32, 32}}, cube));
}

// A PyTorch MLP (1024 inputs, two hidden layers of `hidden`, 10 outputs, Adam, 3 steps, one
// thread) measured through the shim at batch 64-512 x hidden 256-1024: its weights are 16 bytes x
// hidden^2, which a dozen runs let the default powers follow as hidden^(3/2); at batch 4096,
// hidden 2048 it measured 353.6 MB, above that fit's bound. `hidden`, a layer's width, takes whole
// powers: the weights' own square, and a bound that covers the run.
TEST(Selection, ALayersWidthTakesWholePowersAndItsBoundCoversTheMeasuredRunPastTheRuns) {
  const double peaks[4][3] = {{109124080, 118626432, 143890416},
                              {109390760, 118893016, 144157144},
                              {109915944, 119549488, 144682728},
                              {110966600, 120456960, 147825160}};
  const double batches[] = {64, 128, 256, 512}, widths[] = {256, 512, 1024};
  auto runs = [&](const std::string& width_name) {
    Dataset d;
    d.params = {"batch", width_name};
    d.target = "host_peak_bytes";
    for (int b = 0; b < 4; ++b)
      for (int h = 0; h < 3; ++h) d.add({batches[b], widths[h]}, peaks[b][h]);
    return d;
  };
  const double measured = 353570728;  // batch 4096, hidden 2048
  const Model width = fit(runs("hidden"));
  EXPECT_EQ(degree_in(width.parts.front().function, 1), 2) << width.describe();
  EXPECT_GE(width.predict(Point{{{"batch", 4096}, {"hidden", 2048}}, {}}).upper, measured)
      << width.describe();
  // Under a name no prior knows, the same runs' bound falls short of the run.
  const Model unknown = fit(runs("units"));
  EXPECT_LT(unknown.predict(Point{{{"batch", 4096}, {"units", 2048}}, {}}).upper, measured)
      << unknown.describe();
}

// The second trainer of issue 13: its patch side `pd` spans one axis, a name no prior knows,
// so a dozen runs jagging by 3% leave pd^(1/2) and pd^(3/2) forms credible beside batch·pd,
// and their disagreement past the runs widens the bound. Stated, pd is a line: the bound at
// 16x the runs' batch and 2.7x their patch still covers the truth, and is narrower.
TEST(Selection, AStatedAxisNarrowsTheBoundPastTheRunsAndStillCoversTheTruth) {
  const auto truth = [](const std::vector<double>& x) { return 7e7 + 3.3e6 * x[0] * x[1]; };
  const std::vector<double> far{16, 128};
  FitOptions stated;
  stated.priors.axes = {{"pd", 1}};
  std::vector<double> headroom_stated, headroom_unstated;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Dataset d = grid({"batch", "pd"}, {{1, 2, 3, 4}, {16, 32, 48}}, truth, 0.03, seed);
    const Model with = fit(d, stated);
    EXPECT_EQ(degree_in(with.parts.back().function, 1), 1) << with.describe();
    const Prediction p = with.predict(with.parts.back(), far);
    EXPECT_GE(p.upper, truth(far)) << with.describe();
    headroom_stated.push_back(p.upper / truth(far) - 1);
    const Model without = fit(d);
    headroom_unstated.push_back(without.predict(without.parts.back(), far).upper / truth(far) - 1);
  }
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  // Measured: a median headroom of 6.7% stated, 47% unstated.
  EXPECT_LT(median(headroom_stated), 0.5 * median(headroom_unstated));
}

TEST(Selection, AxesStatedForNoParameterOfTheRunsAreRefusedByName) {
  const Dataset d = grid({"batch", "dim"}, {{1, 2, 4}, {16, 32, 48}}, demo_law, 0.01, 1);
  FitOptions typo;
  typo.priors.axes = {{"dims", 3}};
  try {
    (void)fit(d, typo);
    FAIL() << "fitted with axes stated for no parameter";
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("'dims'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch, dim"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_axes("dim=3,pd=1"), (std::map<std::string, int>{{"dim", 3}, {"pd", 1}}));
  for (const char* bad : {"dim", "dim=0", "dim=5", "=3", "dim=3x", "dim=3,,pd", "dim=3,dim=2"})
    EXPECT_THROW((void)parse_axes(bad), std::invalid_argument) << bad;
}

TEST(Selection, OneStandardErrorRuleTakesTheSimplestAmongTheIndistinguishable) {
  const std::vector<double> exponents{0, 0.5, 1, 1.5, 2, 3};
  const auto shaped = prior_exponents({"batch", "dim", "filters"}, exponents, Priors{});
  EXPECT_EQ(shaped[0], (std::vector<double>{0, 1}));
  EXPECT_EQ(shaped[1], (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(shaped[2], exponents);
}

}  // namespace
}  // namespace memwatch::model

namespace memwatch::model {
namespace {

// The Python trainer's sweep (bench/data/unet3d-py-cpu.csv), fitted on its 16 runs at 16^3 and
// 32^3 as a user's cheap first runs would be, asked about 64^3. At 16^3 the peak is mostly
// fixed, so the two volumes alone barely tell dim^2 from dim^3; the law is the one-term
// filters·dim³·batch, which a search refitting only its 256 best-scanned (larger) subsets never
// looked at again, taking filters·dim²·batch + dim² (44% low at batch 8).
TEST(Selection, TheCheapestRunsOfARealTrainerGiveItsLawInTheVolume) {
  const Dataset all = testing::reference_sweep("unet3d-py-cpu");
  const std::size_t dim = static_cast<std::size_t>(
      std::find(all.params.begin(), all.params.end(), "dim") - all.params.begin());
  const std::size_t batch = static_cast<std::size_t>(
      std::find(all.params.begin(), all.params.end(), "batch") - all.params.begin());
  ASSERT_LT(dim, all.params.size());
  ASSERT_LT(batch, all.params.size());
  Dataset small = all, large = all;
  small.rows.clear(), large.rows.clear();
  for (const auto& r : all.rows) {
    if (r.x[dim] <= 32) small.rows.push_back(r);
    if (r.x[dim] == 64 && r.x[batch] >= 2) large.rows.push_back(r);
  }
  ASSERT_EQ(small.rows.size(), 16u);
  ASSERT_EQ(large.rows.size(), 6u);
  const Model m = fit(small);
  EXPECT_EQ(degree_in(m.parts.front().function, dim), 3) << m.describe();
  for (const auto& r : large.rows)
    EXPECT_NEAR(m.predict(m.parts.front(), r.x).value / r.y, 1, 0.10) << m.describe();
}

}  // namespace
}  // namespace memwatch::model
