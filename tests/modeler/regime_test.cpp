// A program that changes behaviour at one value of a parameter (LibTorch's CPU convolution at
// batch 1): the fit must find the break, predict each side with its own formula, keep the break
// through JSON, and leave smooth data in one piece.
#include <gtest/gtest.h>

#include "memwatch/model/model.hpp"
#include "memwatch/model/model_json.hpp"
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

TEST(Regimes, SmoothDataStaysInOnePiece) {
  const Model m = fit(testing::unet_grid(0.002, 5));
  ASSERT_EQ(m.parts.size(), 1u) << m.describe();
  EXPECT_TRUE(m.parts[0].domain.empty());
}

}  // namespace
}  // namespace memwatch::model
