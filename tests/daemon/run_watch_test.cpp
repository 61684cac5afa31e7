// The daemon's watch over a running shim's samples: the capacity watch's warnings as events,
// host and device apart, each named.
#include "run_watch.hpp"

#include <gtest/gtest.h>

using namespace memwatch;
using namespace memwatch::daemon;
using nlohmann::json;

namespace {

constexpr std::int64_t MiB = 1 << 20;

TEST(RunWatch, DeviceGrowthOnCourseAndAHostCrossingAreEachPublishedOnce) {
  protocol::Hello h;
  h.host_capacity_bytes = 1000 * MiB;
  h.device_capacity_bytes = {200 * MiB, 200 * MiB};
  RunWatch watch(h);
  std::vector<json> events;
  for (int i = 0; i <= 40; ++i) {
    protocol::Sample s;
    s.t_s = 0.1 * i;
    s.host_live_bytes = i < 35 ? 50 * MiB : 950 * MiB;
    s.device_live_bytes = 2 * MiB * i;  // 20 MiB/s towards 90% of 400 MiB
    for (json& e : watch.observe(s, {}, 7, "w")) events.push_back(std::move(e));
  }
  ASSERT_EQ(events.size(), 2u);
  const json& course = events[0];
  EXPECT_EQ(course["event"], "warning");
  EXPECT_EQ(course["kind"], "on_course");
  EXPECT_EQ(course["memory"], "device");
  EXPECT_EQ(course["run"], 7);
  EXPECT_EQ(course["workload"], "w");
  EXPECT_EQ(course["capacity_bytes"], 400 * MiB);
  EXPECT_NEAR(course["rate_bytes_per_s"].get<double>(), 20.0 * MiB, 1);
  EXPECT_NEAR(course["eta_s"].get<double>(),
              (360.0 * MiB - course["live_bytes"].get<double>()) / (20.0 * MiB), 0.01);
  EXPECT_EQ(events[1]["kind"], "near_capacity");
  EXPECT_EQ(events[1]["memory"], "host");
  EXPECT_EQ(events[1]["live_bytes"], 950 * MiB);
}

TEST(RunWatch, WithoutCapacitiesNothingIsJudged) {
  RunWatch watch{protocol::Hello{}};
  for (int i = 0; i <= 100; ++i) {
    protocol::Sample s;
    s.t_s = 0.1 * i;
    s.host_live_bytes = s.device_live_bytes = 100 * MiB * i;
    EXPECT_TRUE(watch.observe(s, {}, 1, "w").empty());
  }
}

}  // namespace
