// The verdict at HELLO from both models of a workload, fitted on stored runs whose peaks follow
// a known law: the device model against the devices' capacities, the host model against the
// host's, the over-capacity one sent back (the device's first).
#include "verdict.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "memwatch/model/model_json.hpp"
#include "models.hpp"
#include "process.hpp"
#include "refit.hpp"

using namespace memwatch;
using namespace memwatch::daemon;

namespace {

constexpr double MiB = 1 << 20;

// Host peak 100 MiB + mib/4 MiB, device peak mib MiB.
class VerdictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int mib : {8, 16, 24, 32, 48, 64, 96, 128}) {
      protocol::Hello h;
      h.workload = "grows";
      h.params = {{"mib", mib}};
      const std::int64_t run = store_.begin_run(h, 1);
      protocol::Bye b;
      b.host_peak_bytes = static_cast<std::int64_t>(100 * MiB + mib * MiB / 4);
      b.device_peak_bytes = static_cast<std::int64_t>(mib * MiB);
      store_.finish_run(run, b);
    }
    for (const char* target : {kHostTarget, kDeviceTarget}) {
      std::string why;
      const auto m = fit_runs(store_.runs("grows"), target, why);
      ASSERT_TRUE(m.has_value()) << target << ": " << why;
      store_.save_model("grows", target, model::to_json(*m, -1), 8, 1);
    }
    models_.reload("grows");
  }

  static protocol::Hello hello(double mib, double host_capacity,
                               std::vector<std::int64_t> device_capacities) {
    protocol::Hello h;
    h.workload = "grows";
    h.params = {{"mib", mib}};
    h.host_capacity_bytes = static_cast<std::int64_t>(host_capacity);
    h.device_capacity_bytes = std::move(device_capacities);
    return h;
  }

  test::TempDir dir_;
  Store store_{dir_.file("m.db")};
  ModelCache models_{store_};
};

// memwatchd --axes: a workload with the stated parameter is fitted under it, and says so in its
// model; a stated parameter the workload lacks is no error.
TEST(RefitTest, StatedAxesApplyToTheWorkloadsThatHaveTheParameter) {
  test::TempDir dir;
  Store store(dir.file("a.db"));
  for (int batch : {1, 2, 3, 4})
    for (int pd : {16, 32, 48}) {
      protocol::Hello h;
      h.workload = "patches";
      h.params = {{"batch", batch}, {"pd", pd}};
      protocol::Bye b;
      const double jag = 1 + 0.03 * ((batch * 7 + pd) % 5 - 2) / 2;
      b.host_peak_bytes = static_cast<std::int64_t>((7e7 + 3.3e6 * batch * pd) * jag);
      store.finish_run(store.begin_run(h, 1), b);
    }
  std::string why;
  const auto stated = fit_runs(store.runs("patches"), kHostTarget, why, {{"pd", 1}, {"dim", 3}});
  ASSERT_TRUE(stated) << why;
  EXPECT_EQ(stated->stated_axes, (std::map<std::string, int>{{"pd", 1}}));
  std::vector<double> pd_exponents;
  for (const auto& feature : stated->parts.back().function.features)
    for (const auto& factor : std::get<model::CompoundTerm>(feature).factors)
      if (factor.param == 1) pd_exponents.push_back(factor.exponent);
  EXPECT_FALSE(pd_exponents.empty()) << stated->describe();
  for (double e : pd_exponents) EXPECT_EQ(e, 1) << stated->describe();
  const auto unstated = fit_runs(store.runs("patches"), kHostTarget, why);
  ASSERT_TRUE(unstated) << why;
  EXPECT_TRUE(unstated->stated_axes.empty());
}

TEST_F(VerdictTest, TheDeviceModelIsRefittedFromDevicePeaks) {
  const auto m = models_.find("grows", kDeviceTarget);
  ASSERT_NE(m, nullptr);
  EXPECT_NEAR(m->predict(point_of({{"mib", 200}})).value, 200 * MiB, 0.01 * MiB);
}

TEST_F(VerdictTest, ADeviceOverItsCapacityIsTheVerdictNamingTheDevice) {
  const auto v = judge_run(models_, hello(512, 1024 * MiB, {256 * (1 << 20)}));
  EXPECT_EQ(v.kind, protocol::VerdictKind::over_capacity);
  EXPECT_EQ(v.target, kDeviceTarget);
  EXPECT_NEAR(v.predicted_bytes, 512 * MiB, 0.1 * MiB);
  EXPECT_EQ(v.capacity_bytes, 256 * MiB);
  EXPECT_EQ(v.vary, "mib");
  EXPECT_GE(v.largest_fitting, 230);  // the bound widens off the runs' range
  EXPECT_LE(v.largest_fitting, 256);
}

TEST_F(VerdictTest, TheDevicesCapacitiesAddUp) {
  // The model predicts the sum of the devices' peaks: two of 256 MiB hold 300 MiB, one not.
  const std::int64_t quarter = 256 << 20;
  EXPECT_EQ(judge_run(models_, hello(300, 1024 * MiB, {quarter, 0, quarter})).kind,
            protocol::VerdictKind::fits);
  EXPECT_EQ(judge_run(models_, hello(300, 1024 * MiB, {quarter})).kind,
            protocol::VerdictKind::over_capacity);
  EXPECT_EQ(device_capacity_of(hello(1, 0, {quarter, -1, quarter})), 2 * quarter);
  const std::int64_t most = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(device_capacity_of(hello(1, 0, {most, most})), most);
}

TEST_F(VerdictTest, BothOverTheDeviceFirstAndWhatFitsFitsBoth) {
  // Host: 100 + 128 MiB at 512 over 150 MiB, fits up to mib 200; device up to 256.
  const auto v = judge_run(models_, hello(512, 150 * MiB, {256 << 20}));
  EXPECT_EQ(v.kind, protocol::VerdictKind::over_capacity);
  EXPECT_EQ(v.target, kDeviceTarget);
  EXPECT_GE(v.largest_fitting, 180);
  EXPECT_LE(v.largest_fitting, 200);
}

TEST_F(VerdictTest, OnlyTheHostOverIsTheHostsVerdict) {
  const auto v = judge_run(models_, hello(512, 150 * MiB, {}));
  EXPECT_EQ(v.kind, protocol::VerdictKind::over_capacity);
  EXPECT_EQ(v.target, kHostTarget);
}

TEST_F(VerdictTest, WhenBothFitTheHostsVerdictIsSent) {
  const auto v = judge_run(models_, hello(64, 1024 * MiB, {1 << 30}));
  EXPECT_EQ(v.kind, protocol::VerdictKind::fits);
  EXPECT_EQ(v.target, kHostTarget);
  // No device capacity named: the device model has nothing to judge against.
  EXPECT_EQ(judge_run(models_, hello(100000, 0, {})).kind, protocol::VerdictKind::fits);
}

TEST_F(VerdictTest, NoModelOrParametersNotTheModelsGiveNoVerdict) {
  auto other = hello(64, MiB, {1 << 20});
  other.workload = "unknown";
  EXPECT_EQ(judge_run(models_, other).kind, protocol::VerdictKind::no_model);
  auto wrong = hello(64, MiB, {1 << 20});
  wrong.params = {{"batch", 4}};
  EXPECT_EQ(judge_run(models_, wrong).kind, protocol::VerdictKind::no_model);
}

}  // namespace
