// Device memory against a real daemon, with the fake CUDA libraries: runs whose device peak is
// their parameter teach the daemon a device model, and a run predicted past the device's
// capacity is warned before it allocates (and stopped with MEMWATCH_ON_OOM=abort); device
// growth on course to pass the share of its capacity is warned while it runs.
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
const std::string kFakeDir = MEMWATCH_FAKE_DIR;
const std::string kProgram = MEMWATCH_DEVICE_RT_PATH;

test::Environment shim_env(const test::Daemon& d, const std::string& workload,
                           const std::string& params) {
  return {{"LD_PRELOAD", kShim},           {"LD_LIBRARY_PATH", kFakeDir},
          {"MEMWATCH_CUPTI", "off"},       {"MEMWATCH_ENDPOINT", d.ingest()},
          {"MEMWATCH_WORKLOAD", workload}, {"MEMWATCH_PARAMS", params}};
}

TEST(DeviceDaemon, ARunPredictedPastTheDeviceCapacityIsWarnedAndAbortStopsIt) {
  test::TempDir dir;
  test::Daemon daemon(dir.path());
  const std::vector<int> sizes = {8, 16, 24, 32, 48, 64, 96, 128};
  for (int mib : sizes) {
    const auto r = test::run({kProgram, "alloc_mib", std::to_string(mib)},
                             shim_env(daemon, "devgrows", "mib=" + std::to_string(mib)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const json runs = daemon.wait_runs(
      "devgrows", [&](const json& r) { return test::all_finished(r, sizes.size()); });
  ASSERT_TRUE(test::all_finished(runs, sizes.size())) << runs.dump();
  for (const json& r : runs) {
    EXPECT_EQ(r["device_peak_bytes"], r["params"]["mib"].get<std::int64_t>() << 20);
    // BYE's peak of each device, kept by the store: all of it on device 0.
    EXPECT_EQ(r["device_peaks"], json::array({r["params"]["mib"].get<std::int64_t>() << 20}))
        << r.dump();
  }
  const json model = daemon.wait_model("devgrows", "device_peak_bytes", {{"mib", 1}},
                                       static_cast<int>(sizes.size()));
  ASSERT_EQ(model["ok"], true) << model.dump();
  EXPECT_NEAR(model["peak_bytes"].get<double>(), 1 << 20, 1 << 16);

  auto env = shim_env(daemon, "devgrows", "mib=512");
  env["MEMWATCH_CAPACITY"] = "device0=256MiB";
  test::EventLog events(daemon);
  const auto warned = test::run({kProgram, "alloc_mib", "512"}, env);
  EXPECT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_NE(warned.err.find("memwatch: warning: predicted device peak 0.50 GiB"), std::string::npos)
      << warned.err;
  EXPECT_NE(warned.err.find("exceeds the device capacity 0.25 GiB"), std::string::npos)
      << warned.err;
  EXPECT_NE(warned.err.find("the largest mib that fits is"), std::string::npos) << warned.err;
  const auto published =
      events.wait_for([](const json& e) { return e.value("kind", "") == "predicted_oom"; }, 5s);
  ASSERT_TRUE(published.has_value());
  EXPECT_EQ((*published)["target"], "device_peak_bytes");
  EXPECT_EQ((*published)["memory"], "device");
  EXPECT_EQ((*published)["capacity_bytes"], 256 << 20);

  env["MEMWATCH_ON_OOM"] = "abort";
  const auto stopped = test::run({kProgram, "alloc_mib", "512"}, env);
  EXPECT_EQ(stopped.exit_code, 75) << stopped.err;
  EXPECT_EQ(stopped.out, "");  // stopped before main: it never allocated, never printed
  EXPECT_NE(stopped.err.find("predicted device peak"), std::string::npos) << stopped.err;

  env["MEMWATCH_PARAMS"] = "mib=64";
  const auto fits = test::run({kProgram, "alloc_mib", "64"}, env);
  EXPECT_EQ(fits.exit_code, 0);
  EXPECT_EQ(fits.err.find("warning"), std::string::npos) << fits.err;
}

TEST(DeviceDaemon, DeviceGrowthOnCourseToPassTheShareIsWarnedAndPublished) {
  test::TempDir dir;
  test::Daemon daemon(dir.path());
  test::EventLog events(daemon);
  auto env = shim_env(daemon, "devclimbs", "");
  env["MEMWATCH_CAPACITY"] = "device0=256MiB";
  // 40 MiB/s for almost 4 s up to 148 MiB, then held: never past 90% of 256 MiB.
  const auto r = test::run({kProgram, "grow", "150", "4", "100", "1000"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("memwatch: warning: live device 0 memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("on course to pass 90% of the capacity 0.25 GiB"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("is past"), std::string::npos) << r.err;
  const auto published = events.wait_for(
      [](const json& e) { return e["event"] == "warning" && e["workload"] == "devclimbs"; }, 5s);
  ASSERT_TRUE(published.has_value());
  EXPECT_EQ((*published)["kind"], "on_course");
  EXPECT_EQ((*published)["memory"], "device");
  EXPECT_EQ((*published)["capacity_bytes"], 256 << 20);
}

TEST(DeviceDaemon, AFlatDeviceLevelIsNeverWarned) {
  test::TempDir dir;
  test::Daemon daemon(dir.path());
  auto env = shim_env(daemon, "devflat", "");
  env["MEMWATCH_CAPACITY"] = "device0=256MiB";
  const auto r = test::run({kProgram, "grow", "64", "64", "0", "3000"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

}  // namespace
