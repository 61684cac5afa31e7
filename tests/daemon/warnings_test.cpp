// Warnings while a program runs, end to end: a real program under the shim, reporting to a real
// daemon, whose events a subscriber reads. Growth on course to pass the share of a small
// capacity is warned on stderr and published before the program gets there; a flat level well
// below the capacity is not warned at all.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon_process.hpp"
#include "event_log.hpp"
#include "process.hpp"

using nlohmann::json;
using namespace memwatch;
using namespace std::chrono_literals;

namespace {

const std::string kShim = MEMWATCH_SHIM_PATH;
const std::string kPatterns = MEMWATCH_PATTERNS_PATH;

test::Environment watched(const test::Daemon& d, const std::string& workload) {
  return {{"LD_PRELOAD", kShim},
          {"MEMWATCH_ENDPOINT", d.ingest()},
          {"MEMWATCH_WORKLOAD", workload},
          {"MEMWATCH_CAPACITY", "host=256MiB"}};
}

auto warning_of(const std::string& workload) {
  return [workload](const json& e) { return e["event"] == "warning" && e["workload"] == workload; };
}

TEST(Warnings, GrowthOnCourseToPassTheShareIsWarnedOnStderrAndPublished) {
  test::TempDir dir;
  test::Daemon daemon(dir.path());
  test::EventLog events(daemon);
  // 40 MiB/s for almost 4 s up to 148 MiB, then held: never past 90% of 256 MiB (230 MiB).
  const auto r =
      test::run({kPatterns, "grow", "150", "4", "100", "1000"}, watched(daemon, "climbs"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("memwatch: warning: live host memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GiB/s, on course to pass 90% of the capacity 0.25 GiB in"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("is past"), std::string::npos) << r.err;
  const auto published = events.wait_for(warning_of("climbs"), 5s);
  ASSERT_TRUE(published.has_value());
  EXPECT_EQ((*published)["kind"], "on_course");
  EXPECT_EQ((*published)["memory"], "host");
  EXPECT_EQ((*published)["capacity_bytes"], 256 << 20);
  EXPECT_GT((*published)["eta_s"].get<double>(), 0);
  EXPECT_LE((*published)["eta_s"].get<double>(), 30);
  // About 40 MiB/s (the program sleeps between steps, so a little less).
  EXPECT_GT((*published)["rate_bytes_per_s"].get<double>(), 10 << 20);
  EXPECT_LT((*published)["rate_bytes_per_s"].get<double>(), 48 << 20);
}

TEST(Warnings, AFlatLevelWellBelowTheCapacityIsNeverWarned) {
  test::TempDir dir;
  test::Daemon daemon(dir.path());
  test::EventLog events(daemon);
  // 32 MiB at once, held for 3 s: one step, then no growth.
  const auto r = test::run({kPatterns, "grow", "32", "32", "0", "3000"}, watched(daemon, "flat"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  // Events come in order: by the run's end, any warning of it would have come.
  ASSERT_TRUE(events.wait_for([](const json& e) { return e["event"] == "run_finished"; }, 5s));
  EXPECT_FALSE(events.wait_for(warning_of("flat"), 0ms).has_value());
}

TEST(Warnings, TheDaemonsSettingsAreItsOwn) {
  test::TempDir dir;
  // A horizon of 0: the daemon publishes no trend warning, whatever the shim says.
  test::DaemonSetup setup;
  setup.more_args = {"--warn-horizon", "0"};
  test::Daemon daemon(dir.path(), setup);
  test::EventLog events(daemon);
  const auto r =
      test::run({kPatterns, "grow", "150", "4", "100", "200"}, watched(daemon, "climbs"));
  EXPECT_NE(r.err.find("on course"), std::string::npos) << r.err;
  ASSERT_TRUE(events.wait_for([](const json& e) { return e["event"] == "run_finished"; }, 5s));
  EXPECT_FALSE(events.wait_for(warning_of("climbs"), 0ms).has_value());
}

}  // namespace
