// A program that changes behaviour at one value of a parameter (LibTorch's CPU convolution at
// batch 1): the fit must find the break, predict each side with its own formula, keep the break
// through JSON, and leave smooth data in one piece.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "memwatch/model/model.hpp"
#include "memwatch/model/model_json.hpp"
#include "reference_sweep.hpp"
#include "synthetic.hpp"

namespace memwatch::model {
namespace {

using testing::grid;

// At batch 1 a per-sample column buffer (27 x the input volume) joins the peak; from batch 2 on
// a library workspace of fixed size does instead.
double two_paths(const std::vector<double>& x) {
  const double batch = x[0], dim = x[1], filters = x[2];
  const double activations = 60 * batch * dim * dim * dim * filters;
  if (batch <= 1) return 5e7 + activations + 27 * 4 * 4 * dim * dim * dim;
  return 9e7 + activations;
}

Dataset two_path_grid(unsigned seed) {
  return grid({"batch", "dim", "filters"}, {{1, 2, 4, 8}, {16, 32, 48, 64, 80}, {8, 16, 24}},
              two_paths, 0.001, seed);
}

TEST(Regimes, TheBreakAtBatchOneIsFoundAndEachSideFitsItsOwnLaw) {
  const Model m = fit(two_path_grid(1));
  ASSERT_EQ(m.parts.size(), 2u) << m.describe();
  for (const auto& part : m.parts) {
    ASSERT_EQ(part.domain.size(), 1u) << m.describe();
    EXPECT_EQ(part.domain.front().param, 0u);  // batch
    EXPECT_EQ(part.domain.front().at, 1);
    EXPECT_LT(part.loo_mape, 0.005) << m.describe();
  }
  EXPECT_NE(m.describe().find("[batch <= 1]"), std::string::npos) << m.describe();
  EXPECT_NE(m.describe().find("[batch > 1]"), std::string::npos) << m.describe();

  // Unseen points on both sides, each through its own part.
  const Dataset unseen =
      grid({"batch", "dim", "filters"}, {{1, 5, 7}, {40, 56, 72}, {10, 20}}, two_paths, 0, 2);
  for (const auto& r : unseen.rows) {
    const Point p{{{"batch", r.x[0]}, {"dim", r.x[1]}, {"filters", r.x[2]}}, {}};
    EXPECT_EQ(&m.part_for(p), r.x[0] <= 1 ? &m.parts[0] : &m.parts[1]);
    EXPECT_NEAR(m.predict(p).value / r.y, 1, 0.01) << "batch " << r.x[0] << " dim " << r.x[1];
  }
}

TEST(Regimes, OneFormulaCannotFollowBothSides) {
  FitOptions whole;
  whole.split_depth = 0;
  const Dataset d = two_path_grid(3);
  const Model single = fit(d, whole);
  const Model cut = fit(d);
  ASSERT_EQ(single.parts.size(), 1u);
  EXPECT_GT(single.parts[0].loo_mape, 4 * cut.parts[0].loo_mape) << single.describe();
}

TEST(Regimes, TheBreakSurvivesJson) {
  const Model m = fit(two_path_grid(4));
  const Model back = model_from_json(to_json(m));
  ASSERT_EQ(back.parts.size(), m.parts.size());
  const Point p{{{"batch", 1}, {"dim", 40}, {"filters", 10}}, {}};
  EXPECT_EQ(back.predict(p).value, m.predict(p).value);
  EXPECT_EQ(back.parts[1].domain.front().above, true);
}

TEST(Regimes, NoBreakWithinTheNoiseTheRepetitionsShow) {
  // The same break, but repeated measurements that scatter by 20%: one formula's error is
  // within that noise, so no cut is made (nor a GP tree tried).
  Dataset d = two_path_grid(1);
  for (auto& r : d.rows) r.repetitions = {0.8 * r.y, r.y, 1.2 * r.y};
  const Model m = fit(d);
  ASSERT_EQ(m.parts.size(), 1u) << m.describe();
  EXPECT_EQ(m.parts[0].search, "terms");
}

TEST(Regimes, SmoothDataStaysInOnePiece) {
  const Model m = fit(testing::unet_grid(0.002, 5));
  ASSERT_EQ(m.parts.size(), 1u) << m.describe();
  EXPECT_TRUE(m.parts[0].domain.empty());
}

// The example: a log factor the search may not use (no --log) leaves error above noise
// everywhere; wherever the fit cuts, each part must do better than one formula does on its runs.
TEST(Regimes, EveryPartOfACutBeatsTheSingleFormulaThere) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> grids{
      {{2, 4, 8, 16}, {1, 2, 4, 8, 16}},
      {{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8}},
      {{1, 2, 4, 8, 16}, {1, 2, 3, 4, 5}},
      {{1, 3, 5, 7, 9}, {1, 2, 4, 8, 16, 32}}};
  for (const auto& [xs, ys] : grids) {
    const Dataset d = grid(
        {"x", "y"}, {xs, ys}, [](const auto& v) { return 1 + 0.2 * v[0] * v[0] * std::log2(v[1]); },
        0, 1);
    FitOptions whole_only;
    whole_only.split_depth = 0;
    const Model one = fit(d, whole_only);
    const Eigen::VectorXd whole = loo_errors(d, one.parts[0].function, true);
    const Model m = fit(d);
    for (const auto& part : m.parts) {
      double there = 0;
      std::size_t runs = 0;
      for (std::size_t i = 0; i < d.rows.size(); ++i)
        if (inside(part.domain, d.rows[i].x)) there += whole(static_cast<Eigen::Index>(i)), ++runs;
      EXPECT_LT(part.loo_mape, there / static_cast<double>(runs)) << m.describe();
      EXPECT_LT(part.loo_mape, 0.5) << m.describe();
    }
  }
}

TEST(Regimes, ACutWhoseOneSideGetsWorseIsRefusedThoughTheAverageHalves) {
  // Twelve runs; the single formula errs 10% on the first four and 30% on the other eight.
  Dataset d;
  d.params = {"x"};
  for (int i = 1; i <= 12; ++i) d.add({static_cast<double>(i)}, 1);
  Eigen::VectorXd whole(12);
  whole << 0.1, 0.1, 0.1, 0.1, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3;
  SubModel low, high;
  low.domain = {Cut{0, 4, false}};
  high.domain = {Cut{0, 4, true}};
  high.loo_mape = 0.01;
  low.loo_mape = 0.5;  // the average falls from 23% to 17%, but this side is 5x worse
  EXPECT_FALSE(every_part_better(d, whole, {low, high}));
  low.loo_mape = 0.09;
  EXPECT_TRUE(every_part_better(d, whole, {low, high}));
}

// The Python trainer's sweep (bench/data/unet3d-py-cpu.csv) fitted without the runs `held_out`
// (filters, dim, batch): one of run.py's random 70/30 splits. The model and its MAPE on them.
std::pair<Model, double> fitted_without(const std::set<std::vector<double>>& held_out) {
  const Dataset all = testing::reference_sweep("unet3d-py-cpu");
  const auto index = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(all.params.begin(), all.params.end(), name) -
                                    all.params.begin());
  };
  const std::size_t filters = index("filters"), dim = index("dim"), batch = index("batch");
  EXPECT_LT(std::max({filters, dim, batch}), all.params.size());
  Dataset train = all;
  train.rows.clear();
  std::vector<Dataset::Row> test;
  for (const auto& r : all.rows)
    (held_out.contains({r.x[filters], r.x[dim], r.x[batch]}) ? test : train.rows).push_back(r);
  EXPECT_EQ(test.size(), held_out.size());
  Model m = fit(train);
  double sum = 0;
  for (const auto& r : test) {
    Point at;
    for (std::size_t p = 0; p < all.params.size(); ++p) at.values[all.params[p]] = r.x[p];
    sum += std::abs(m.predict(at).value / r.y - 1);
  }
  return {std::move(m), sum / static_cast<double>(test.size())};
}

// Without 15 runs, 7 at batch 1 are left. Each side of a cut at batch 1 beat one formula's
// leave-one-out errors there (batch 1: 3.2%, a form picked from many on 7 runs), so the cut was
// kept, and missed the 15 by 7.1%. One formula, each configuration's other batches correcting
// it, misses them by 2.3%: compared with that, the side from batch 2 on is no better (0.34%
// against 0.24%) and the cut is refused.
TEST(Regimes, ACutIsComparedWithTheSingleFormulaAsItPredicts) {
  const auto [m, mape] = fitted_without({{8, 32, 8},
                                         {8, 48, 2},
                                         {8, 64, 1},
                                         {8, 64, 2},
                                         {8, 80, 1},
                                         {8, 80, 8},
                                         {16, 16, 1},
                                         {16, 32, 2},
                                         {16, 32, 8},
                                         {16, 48, 1},
                                         {16, 48, 2},
                                         {16, 64, 1},
                                         {16, 64, 2},
                                         {16, 64, 8},
                                         {16, 80, 2}});
  EXPECT_LT(mape, 0.04) << m.describe();
}

// Another split leaves 7 runs at batch 1 whose side claims 3.7% leave-one-out and passes the
// comparison above (the single formula's errors there are 11.6%); chosen again without each
// run, its formula misses that run by 24.9%. The cut missed the held-out runs by 4.4%; refused,
// one formula misses them by 1.35%.
TEST(Regimes, ASmallSidesFormulaIsJudgedAsItWouldBeChosenWithoutEachRun) {
  const auto [m, mape] = fitted_without({{16, 32, 4},
                                         {16, 48, 1},
                                         {16, 48, 8},
                                         {16, 64, 1},
                                         {16, 80, 2},
                                         {16, 96, 1},
                                         {8, 16, 4},
                                         {8, 16, 8},
                                         {8, 32, 1},
                                         {8, 32, 4},
                                         {8, 64, 4},
                                         {8, 80, 1},
                                         {8, 80, 2},
                                         {8, 96, 2},
                                         {8, 96, 8}});
  EXPECT_EQ(m.parts.size(), 1u) << m.describe();
  EXPECT_LT(mape, 0.025) << m.describe();
}

}  // namespace
}  // namespace memwatch::model
