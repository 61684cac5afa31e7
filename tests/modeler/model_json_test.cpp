// A model written as JSON and read back predicts exactly as the original.
#include "memwatch/model/model_json.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "synthetic.hpp"

namespace memwatch::model {
namespace {

void expect_same_predictions(const Model& a, const Model& b, const std::vector<Point>& points) {
  for (const auto& p : points) {
    const Prediction pa = a.predict(p), pb = b.predict(p);
    EXPECT_EQ(pa.value, pb.value);
    EXPECT_EQ(pa.upper, pb.upper);
    EXPECT_EQ(pa.extrapolating, pb.extrapolating);
    EXPECT_EQ(pa.reach_ratio, pb.reach_ratio);
    EXPECT_EQ(pa.vouched, pb.vouched);
  }
}

TEST(ModelJson, RoundTripKeepsEveryPrediction) {
  const Model m = fit(testing::unet_grid(0.002, 8));
  const Model back = model_from_json(to_json(m));
  EXPECT_EQ(back.params, m.params);
  ASSERT_EQ(back.parts.size(), 1u);
  EXPECT_EQ(back.parts[0].runner_ups.size(), m.parts[0].runner_ups.size());
  EXPECT_EQ(back.parts[0].bound.describe(), m.parts[0].bound.describe());
  // Host memory: the local scale keeps batch 1 apart (local_scale.hpp), batch being parameter 0.
  EXPECT_EQ(back.parts[0].bound.scale.apart, 0u);
  expect_same_predictions(
      m, back,
      {Point{{{"batch", 2}, {"dim", 64}, {"filters", 16}, {"levels", 4}}, {}},
       Point{{{"batch", 64}, {"dim", 300}, {"filters", 32}, {"levels", 6}}, {}}});
  EXPECT_EQ(to_json(back), to_json(m));
}

TEST(ModelJson, AModelSavedBeforeTheLocalScaleKeepsItsOneWidth) {
  const Model m = fit(testing::unet_grid(0.002, 8));
  auto j = nlohmann::json::parse(to_json(m));
  j["models"][0]["bound"].erase("local_scale");
  const Model old = model_from_json(j.dump());
  EXPECT_TRUE(old.parts[0].bound.scale.empty());
  Bound one_width = m.parts[0].bound;
  one_width.scale = {};
  const std::vector<double> x{2, 64, 16, 4};
  EXPECT_EQ(old.predict(old.parts[0], x).upper,
            upper_bound(one_width, m.parts[0].function, x, m.parts[0].slices));
}

// Errors of a few MiB on peaks from 400 MiB to 100 GB: the scale carries them by size.
TEST(ModelJson, ErrorsCarriedBySizeRoundTripAndAreCheckedForLength) {
  Dataset d = testing::unet_grid(0, 2);
  std::mt19937 rng(2);
  std::normal_distribution<double> gauss(0, 1);
  for (auto& r : d.rows) r.y += 4.0 * (1 << 20) * gauss(rng);
  const Model m = fit(d);
  ASSERT_GT(m.parts[0].bound.scale.size_power, 0);
  const Model back = model_from_json(to_json(m));
  EXPECT_EQ(back.parts[0].bound.scale.size_power, m.parts[0].bound.scale.size_power);
  expect_same_predictions(
      m, back,
      {Point{{{"batch", 2}, {"dim", 64}, {"filters", 16}, {"levels", 4}}, {}},
       Point{{{"batch", 16}, {"dim", 144}, {"filters", 32}, {"levels", 5}}, {}}});
  EXPECT_EQ(to_json(back), to_json(m));
  auto power = nlohmann::json::parse(to_json(m));
  power["models"][0]["bound"]["local_scale"]["size_power"] = 1.5;
  EXPECT_THROW((void)model_from_json(power.dump()), ModelJsonError);
  auto short_sizes = nlohmann::json::parse(to_json(m));
  short_sizes["models"][0]["bound"]["local_scale"]["sizes"].erase(0);
  try {
    (void)model_from_json(short_sizes.dump());
    FAIL() << "accepted a scale with a size missing";
  } catch (const ModelJsonError& e) {
    EXPECT_NE(std::string(e.what()).find("bound.local_scale.sizes"), std::string::npos) << e.what();
  }
}

TEST(ModelJson, RoundTripKeepsAnExponentialFactor) {
  const Dataset d = testing::grid(
      {"batch", "filters", "levels"}, {{1, 2, 4, 8}, {8, 16, 32}, {3, 4, 5}},
      [](const std::vector<double>& x) {
        return 2e7 + 500 * x[1] * x[1] * std::pow(4, x[2]) + 1e6 * x[0] * x[1];
      },
      0.001, 4);
  const Model m = fit(d);
  const std::string text = to_json(m);
  // Written as 4^levels, without a power's "exponent": a reader that knows only powers refuses it.
  const nlohmann::json saved = nlohmann::json::parse(text);
  bool exponential = false;
  for (const auto& term : saved["models"][0]["terms"])
    for (const auto& factor : term.value("factors", nlohmann::json::array()))
      if (factor.contains("base")) {
        exponential = true;
        EXPECT_EQ(factor["param"], "levels");
        EXPECT_TRUE(factor["base"] == 2.0 || factor["base"] == 4.0) << factor;
        EXPECT_FALSE(factor.contains("exponent")) << factor;
      }
  ASSERT_TRUE(exponential) << m.describe();
  const Model back = model_from_json(text);
  expect_same_predictions(m, back,
                          {Point{{{"batch", 4}, {"filters", 16}, {"levels", 6}}, {}},
                           Point{{{"batch", 2}, {"filters", 8}, {"levels", 3}}, {}}});
  EXPECT_EQ(to_json(back), text);
  std::string negative = text;
  negative.insert(negative.find("\"base\": ") + 8, "-");
  try {
    (void)model_from_json(negative);
    FAIL() << "accepted a negative base";
  } catch (const ModelJsonError& e) {
    EXPECT_NE(std::string(e.what()).find("base must be a positive number"), std::string::npos)
        << e.what();
  }
}

TEST(ModelJson, RoundTripKeepsGpFeaturesAndCategories) {
  Dataset d;
  d.params = {"batch", "levels"};
  d.categories = {"device"};
  for (double b : {1.0, 2.0, 4.0, 8.0})
    for (double l : {2.0, 3.0, 4.0, 5.0, 6.0}) {
      d.add({b, l}, 1e6 + 3e3 * std::pow(4, l) + 1e5 * b, {"cpu"});
      d.add({b, l}, 2e6 + 1e3 * std::pow(4, l) + 3e5 * b, {"gpu"});
    }
  FitOptions o;
  o.gp_above = 0;
  const Model m = fit(d, o);
  ASSERT_EQ(m.parts.size(), 2u);
  const Model back = model_from_json(to_json(m));
  EXPECT_EQ(to_json(back), to_json(m));
  expect_same_predictions(m, back,
                          {Point{{{"batch", 3}, {"levels", 4}}, {{"device", "cpu"}}},
                           Point{{{"batch", 16}, {"levels", 7}}, {{"device", "gpu"}}}});
}

TEST(ModelJson, MalformedInputIsRefusedWithAReason) {
  EXPECT_THROW((void)model_from_json("not json"), ModelJsonError);
  EXPECT_THROW((void)model_from_json("{\"schema\":\"other/1\"}"), ModelJsonError);
  const std::string good = to_json(fit(testing::unet_grid(0, 1)));
  std::string broken = good;
  broken.replace(broken.find("\"runs\""), 6, "\"rums\"");
  try {
    (void)model_from_json(broken);
    FAIL() << "accepted a model without runs";
  } catch (const ModelJsonError& e) {
    EXPECT_NE(std::string(e.what()).find("runs"), std::string::npos) << e.what();
  }
  auto negative = nlohmann::json::parse(good);
  negative["models"][0]["bound"]["extrapolation"][0]["miss_per_reach"] = -0.1;
  try {
    (void)model_from_json(negative.dump());
    FAIL() << "accepted a negative widening past the runs";
  } catch (const ModelJsonError& e) {
    EXPECT_NE(std::string(e.what()).find("bound.extrapolation"), std::string::npos) << e.what();
  }
}

TEST(ModelJson, AModelSavedBeforeTheExtrapolationCheckDoesNotWidenPastTheRuns) {
  const Model m = fit(testing::unet_grid(0.002, 8));
  auto j = nlohmann::json::parse(to_json(m));
  j["models"][0]["bound"].erase("extrapolation");
  const Model old = model_from_json(j.dump());
  EXPECT_TRUE(old.parts[0].bound.extrapolation.params.empty());
  const Point far{{{"batch", 64}, {"dim", 300}, {"filters", 32}, {"levels", 6}}, {}};
  const Prediction p = old.predict(far);
  EXPECT_TRUE(p.vouched);
  const Prediction now = m.predict(far);
  const double widening =
      now.value *
      m.parts[0].bound.extrapolation.at(m.parts[0].function, old.values_of(far)).widening;
  EXPECT_NEAR(p.upper, now.upper - widening, 1e-9 * now.upper);
}

}  // namespace
}  // namespace memwatch::model
