// libmemwatch.so preloaded into programs that allocate device memory through every route,
// against the fake CUDA libraries (tests/device/fake): each report must give exactly the peaks
// the program's sequence of calls makes, per device, with pinned and managed memory apart.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "process.hpp"

using nlohmann::json;
using namespace memwatch::test;

namespace {

constexpr std::int64_t MiB = 1024 * 1024;

const std::string kShim = MEMWATCH_SHIM_PATH;
const std::string kFakeDir = MEMWATCH_FAKE_DIR;
const std::string kRuntimeProgram = MEMWATCH_DEVICE_RT_PATH;
const std::string kDriverProgram = MEMWATCH_DEVICE_DRV_PATH;
const std::string kFakeCupti = MEMWATCH_FAKE_CUPTI;

struct Measured {
  Finished run;
  json report;
  json truth;  // what the fake driver still held at the end
};

Measured measure(const std::string& program, const std::string& mode, Environment env = {}) {
  TempDir dir;
  env["LD_PRELOAD"] = kShim;
  env["LD_LIBRARY_PATH"] = kFakeDir;
  env["MEMWATCH_REPORT"] = dir.file("report.json");
  if (env.count("MEMWATCH_CUPTI") == 0) env["MEMWATCH_CUPTI"] = "off";
  Measured m;
  m.run = run({program, mode}, env);
  m.report = json::parse(read_file(dir.file("report.json")));
  const auto brace = m.run.out.rfind('{');
  if (brace != std::string::npos) m.truth = json::parse(m.run.out.substr(brace));
  return m;
}

std::int64_t device_peak(const json& report, int index) {
  for (const json& d : report["devices"])
    if (d["index"] == index) return d["peak_bytes"];
  return 0;
}

std::int64_t device_live(const json& report, int index) {
  for (const json& d : report["devices"])
    if (d["index"] == index) return d["live_bytes"];
  return 0;
}

json sources(std::initializer_list<const char*> names) {
  json a = json::array();
  for (const char* n : names) a.push_back(n);
  return a;
}

void expect_clean(const Measured& m) {
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_EQ(m.run.err, "");
}

TEST(DevicePreload, RuntimeCallsPerDeviceWithPinnedAndManagedApart) {
  const Measured m = measure(kRuntimeProgram, "runtime");
  expect_clean(m);
  // 64 MiB, a pitched 1000 x 1000 (1024-byte rows), a 3D 1000 x 100 x 10 (same rows); the
  // failed 2 GiB is not counted; then 16 MiB on device 1 while device 0 still holds.
  const std::int64_t device0 = 64 * MiB + 1024 * 1000 + 1024 * 100 * 10;
  EXPECT_EQ(device_peak(m.report, 0), device0);
  EXPECT_EQ(device_peak(m.report, 1), 16 * MiB);
  EXPECT_EQ(m.report["device_peak_bytes"], device0 + 16 * MiB);
  EXPECT_EQ(m.report["managed_peak_bytes"], 8 * MiB);
  EXPECT_EQ(m.report["pinned_peak_bytes"], 6 * MiB);
  EXPECT_EQ(device_live(m.report, 0), 0);
  EXPECT_EQ(m.report["pinned_live_bytes"], 0);
  EXPECT_EQ(m.report["managed_live_bytes"], 0);
  // The runtime's own driver calls (through cuGetProcAddress) are not counted a second time.
  EXPECT_EQ(m.report["sources"], sources({"runtime-hooks"}));
  // Device memory is not host memory.
  EXPECT_LT(m.report["host"]["peak_bytes"].get<std::int64_t>(), 16 * MiB);
}

TEST(DevicePreload, DirectDriverCallsIncludingPoolAndVmm) {
  const Measured m = measure(kDriverProgram, "driver");
  expect_clean(m);
  EXPECT_EQ(device_peak(m.report, 0), 32 * MiB + 512 * 1000 + 2 * MiB + 2 * MiB);
  EXPECT_EQ(m.report["managed_peak_bytes"], 4 * MiB);
  EXPECT_EQ(m.report["pinned_peak_bytes"], 1 * MiB);
  // The pool keeps the 2 MiB it grew to; the fake driver agrees.
  EXPECT_EQ(device_live(m.report, 0), 2 * MiB);
  EXPECT_EQ(m.truth["device0_used"], 2 * MiB);
  EXPECT_EQ(m.report["sources"], sources({"driver-hooks"}));
}

TEST(DevicePreload, StreamOrderedPoolCountsWhatThePoolHolds) {
  const Measured m = measure(kRuntimeProgram, "async");
  expect_clean(m);
  // 3 + 4 MiB live at once: the pool grew to 8 MiB (2 MiB steps), more than the 7 MiB asked.
  EXPECT_EQ(device_peak(m.report, 0), 8 * MiB);
  // Trimmed, then grown to 2 MiB again, which it keeps after the last free.
  EXPECT_EQ(device_live(m.report, 0), 2 * MiB);
  EXPECT_EQ(m.truth["device0_used"], 2 * MiB);
}

TEST(DevicePreload, CuGetProcAddressBothVersionsAndPerThreadStreamVariants) {
  const Measured m = measure(kRuntimeProgram, "getproc");
  expect_clean(m);
  // Device 1: 48 MiB through cuGetProcAddress_v2, 16 MiB through the v1 fetched from it, then
  // 2 MiB of pool through the per-thread-stream cuMemAllocAsync; the failed 2 GiB not counted.
  EXPECT_EQ(device_peak(m.report, 1), 66 * MiB);
  EXPECT_EQ(device_peak(m.report, 0), 0);
  EXPECT_EQ(device_live(m.report, 1), 2 * MiB);
  EXPECT_EQ(m.truth["device1_used"], 2 * MiB);
  EXPECT_EQ(m.report["sources"], sources({"driver-hooks"}));
}

TEST(DevicePreload, DlopenAndDlsymOfTheDriver) {
  const Measured m = measure(kRuntimeProgram, "dlsym");
  expect_clean(m);
  EXPECT_EQ(device_peak(m.report, 0), 40 * MiB);
  EXPECT_EQ(m.report["managed_peak_bytes"], 4 * MiB);
  EXPECT_EQ(m.report["pinned_peak_bytes"], 2 * MiB);
  EXPECT_EQ(device_live(m.report, 0), 0);
}

TEST(DevicePreload, DlsymOfTheRuntimeFromItsOwnHandle) {
  const Measured m = measure(kRuntimeProgram, "dlsym_runtime");
  expect_clean(m);
  EXPECT_EQ(device_peak(m.report, 1), 32 * MiB);
  EXPECT_EQ(device_live(m.report, 1), 0);
  EXPECT_EQ(m.report["sources"], sources({"runtime-hooks"}));
}

TEST(DevicePreload, VmmCountsPhysicalMemoryUntilReleasedAndUnmapped) {
  const Measured m = measure(kRuntimeProgram, "entry_vmm");
  expect_clean(m);
  // Three 20 MiB handles mapped at once (the first already released, still mapped); counting
  // at release would give 40 MiB, ignoring unmaps 80, counting the reservation 188.
  EXPECT_EQ(device_peak(m.report, 0), 60 * MiB);
  EXPECT_EQ(device_live(m.report, 0), 0);
  EXPECT_EQ(m.truth["device0_used"], 0);
}

TEST(DevicePreload, ThreadsOnTwoDevicesHoldingAtOnce) {
  const Measured m = measure(kRuntimeProgram, "threads");
  expect_clean(m);
  EXPECT_EQ(device_peak(m.report, 0), 64 * MiB);
  EXPECT_EQ(device_peak(m.report, 1), 64 * MiB);
  EXPECT_EQ(m.report["device_peak_bytes"], 128 * MiB);
  EXPECT_EQ(device_live(m.report, 0), 0);
  EXPECT_EQ(device_live(m.report, 1), 0);
}

// A parent and the child it forked hold device memory at once: the job's peaks are per device
// over both, the parent's 32 MiB counted once though the child's own counters inherited them.
TEST(DevicePreload, AForkedChildsDeviceMemoryIsTheJobsWithItsParents) {
  const Measured m = measure(kRuntimeProgram, "forked");
  expect_clean(m);
  EXPECT_EQ(device_peak(m.report, 0), 32 * MiB);  // the parent's own
  ASSERT_TRUE(m.report.contains("job")) << m.report.dump();
  const json& job = m.report["job"];
  EXPECT_EQ(job["processes"], 2);
  EXPECT_EQ(device_peak(job, 0), 48 * MiB);
  EXPECT_EQ(device_peak(job, 1), 8 * MiB);
  EXPECT_EQ(job["device_peak_bytes"], 56 * MiB);
  EXPECT_EQ(job["device_live_bytes"], 0);
}

TEST(DevicePreload, ProgramsRtldNextLookupsStillAnswerForTheProgram) {
  const Measured m = measure(kRuntimeProgram, "rtld_next");
  expect_clean(m);
  const auto line = m.run.out.substr(0, m.run.out.find('\n'));
  EXPECT_EQ(json::parse(line)["same"], 1);
}

TEST(DevicePreload, CuptiThatCannotStartLeavesTheHooksCounting) {
  // The real libcupti from the CUDA toolkit, on a machine with no driver but the fake one: it
  // cannot subscribe; the run must be unchanged and exact, with at most one line from memwatch.
  Environment env{{"MEMWATCH_CUPTI", "auto"}, {"DEVICE_ROUTES_PAUSE", "1"}};
  const std::string cuda_lib = "/usr/local/cuda/lib64";
  if (std::filesystem::exists(cuda_lib + "/libcupti.so"))
    env["LD_LIBRARY_PATH"] = kFakeDir + ":" + cuda_lib;
  TempDir dir;
  env["LD_PRELOAD"] = kShim;
  env["MEMWATCH_REPORT"] = dir.file("report.json");
  if (env.count("LD_LIBRARY_PATH") == 0) env["LD_LIBRARY_PATH"] = kFakeDir;
  const Finished f = run({kRuntimeProgram, "runtime"}, env);
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const json report = json::parse(read_file(dir.file("report.json")));
  EXPECT_EQ(device_peak(report, 0), 64 * MiB + 1024 * 1000 + 1024 * 100 * 10);
  EXPECT_EQ(device_peak(report, 1), 16 * MiB);
  EXPECT_EQ(report["sources"], sources({"runtime-hooks"}));
  int lines = 0;
  for (char c : f.err) lines += c == '\n';
  EXPECT_LE(lines, 1) << f.err;
  if (lines == 1) {
    EXPECT_EQ(f.err.rfind("memwatch: ", 0), 0u) << f.err;
  }
}

TEST(DevicePreload, ANamedCuptiThatIsMissingIsSaidOnceAndTheHooksCount) {
  const Measured m =
      measure(kRuntimeProgram, "runtime",
              {{"MEMWATCH_CUPTI", "/nonexistent/libcupti.so"}, {"DEVICE_ROUTES_PAUSE", "1"}});
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_NE(m.run.err.find("MEMWATCH_CUPTI=/nonexistent/libcupti.so cannot be loaded"),
            std::string::npos)
      << m.run.err;
  EXPECT_EQ(m.report["sources"], sources({"runtime-hooks"}));
  EXPECT_EQ(m.report["managed_peak_bytes"], 8 * MiB);
}

// CUPTI (the fake one) up before the first allocation: it alone counts, every route, exactly.
Environment with_cupti_first() {
  return {{"MEMWATCH_CUPTI", kFakeCupti}, {"DEVICE_ROUTES_WARMUP", "1"}};
}

TEST(DevicePreload, CuptiAloneCountsTheRuntimeOnceDespiteTheNestedDriverCalls) {
  const Measured m = measure(kRuntimeProgram, "runtime", with_cupti_first());
  expect_clean(m);
  const std::int64_t device0 = 64 * MiB + 1024 * 1000 + 1024 * 100 * 10;
  EXPECT_EQ(device_peak(m.report, 0), device0);
  EXPECT_EQ(device_peak(m.report, 1), 16 * MiB);
  EXPECT_EQ(m.report["device_peak_bytes"], device0 + 16 * MiB);
  EXPECT_EQ(m.report["managed_peak_bytes"], 8 * MiB);
  EXPECT_EQ(m.report["pinned_peak_bytes"], 6 * MiB);
  EXPECT_EQ(device_live(m.report, 0), 0);
  EXPECT_EQ(m.report["sources"], sources({"cupti"}));
}

TEST(DevicePreload, CuptiAloneCountsDriverPoolAndVmm) {
  const Measured d = measure(kDriverProgram, "driver", with_cupti_first());
  expect_clean(d);
  EXPECT_EQ(device_peak(d.report, 0), 32 * MiB + 512 * 1000 + 2 * MiB + 2 * MiB);
  EXPECT_EQ(device_live(d.report, 0), 2 * MiB);
  EXPECT_EQ(d.report["managed_peak_bytes"], 4 * MiB);
  EXPECT_EQ(d.report["pinned_peak_bytes"], 1 * MiB);
  EXPECT_EQ(d.report["sources"], sources({"cupti"}));
  const Measured v = measure(kRuntimeProgram, "entry_vmm", with_cupti_first());
  expect_clean(v);
  EXPECT_EQ(device_peak(v.report, 0), 60 * MiB);
  EXPECT_EQ(device_live(v.report, 0), 0);
  EXPECT_EQ(v.report["sources"], sources({"cupti"}));
  const Measured a = measure(kRuntimeProgram, "async", with_cupti_first());
  expect_clean(a);
  EXPECT_EQ(device_peak(a.report, 0), 8 * MiB);
  EXPECT_EQ(device_live(a.report, 0), 2 * MiB);
  EXPECT_EQ(a.report["sources"], sources({"cupti"}));
}

TEST(DevicePreload, CuptiTakingOverMidRunCountsNothingTwice) {
  // The first three allocations are the hooks', the rest and every free CUPTI's.
  const Measured m = measure(kRuntimeProgram, "runtime",
                             {{"MEMWATCH_CUPTI", kFakeCupti}, {"DEVICE_ROUTES_PAUSE", "1"}});
  expect_clean(m);
  const std::int64_t device0 = 64 * MiB + 1024 * 1000 + 1024 * 100 * 10;
  EXPECT_EQ(device_peak(m.report, 0), device0);
  EXPECT_EQ(device_peak(m.report, 1), 16 * MiB);
  EXPECT_EQ(device_live(m.report, 0), 0);
  EXPECT_EQ(device_live(m.report, 1), 0);
  EXPECT_EQ(m.report["pinned_live_bytes"], 0);
  EXPECT_EQ(m.report["sources"], sources({"cupti", "runtime-hooks"}));
}

TEST(DevicePreload, CuptiHeldByAnotherSubscriberLeavesTheHooksCounting) {
  Environment env = with_cupti_first();
  env["FAKE_CUPTI_BUSY"] = "1";
  const Measured m = measure(kRuntimeProgram, "runtime", env);
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_EQ(m.run.err,
            "memwatch: CUPTI cannot be used (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); "
            "counting with the hooks\n");
  EXPECT_EQ(device_peak(m.report, 0), 64 * MiB + 1024 * 1000 + 1024 * 100 * 10);
  EXPECT_EQ(m.report["sources"], sources({"runtime-hooks"}));
}

TEST(DevicePreload, DeviceCapacitiesComeFromNvml) {
  const Measured m = measure(kRuntimeProgram, "runtime", {{"DEVICE_ROUTES_WARMUP", "1"}});
  expect_clean(m);
  ASSERT_EQ(m.report["devices"].size(), 2u);
  for (const json& d : m.report["devices"]) EXPECT_EQ(d["capacity_bytes"], 1024 * MiB);
}

TEST(DevicePreload, TheCapacityGivenInTheEnvironmentWins) {
  const Measured m =
      measure(kRuntimeProgram, "runtime",
              {{"DEVICE_ROUTES_WARMUP", "1"}, {"MEMWATCH_CAPACITY", "device1=3GiB"}});
  expect_clean(m);
  EXPECT_EQ(m.report["devices"][0]["capacity_bytes"], 1024 * MiB);
  EXPECT_EQ(m.report["devices"][1]["capacity_bytes"], 3072 * MiB);
}

TEST(DevicePreload, WithoutCudaTheReportHasNoDeviceSources) {
  const Measured m = measure(kRuntimeProgram, "rtld_next");
  EXPECT_EQ(m.report["sources"], json::array());
  EXPECT_EQ(m.report["device_peak_bytes"], 0);
}

// A GPU program's sweep models its device peak without being told: the host peak of this one
// is the same at every point, its device peak the point's MiB.
TEST(DeviceSweep, AnAutoSweepOfAProgramUsingADeviceModelsItsDevicePeak) {
  TempDir dir;
  const Finished sweep =
      run({MEMWATCH_BIN, "sweep", "--auto", "--shim", kShim, "--out", dir.file("runs.csv"),
           "--model-out", dir.file("model.json"), "--toward", "mib=512", "--grid",
           "mib=1,2,4,8,16,32,64,128,256,512", "--", kRuntimeProgram, "alloc_mib", "{mib}"},
          {{"LD_LIBRARY_PATH", kFakeDir}, {"MEMWATCH_CUPTI", "off"}});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_NE(sweep.err.find("mib=1: exit 0, device_peak_bytes"), std::string::npos) << sweep.err;
  EXPECT_NE(sweep.out.find("predicted 0.50 GiB"), std::string::npos) << sweep.out;

  const Finished predicted =
      run({MEMWATCH_BIN, "predict", "--model", dir.file("model.json"), "mib=512", "--json"});
  ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
  EXPECT_NEAR(json::parse(predicted.out)["prediction"].get<double>(), 512.0 * MiB, 0.001 * MiB);

  // Told otherwise, it models the host peak, which does not grow: no law.
  const Finished host =
      run({MEMWATCH_BIN, "sweep", "--auto", "--shim", kShim, "--out", dir.file("host.csv"),
           "--measure", "host_peak_bytes", "--budget-runs", "4", "--toward", "mib=512", "--grid",
           "mib=1,2,4,8,16,32,64,128,256,512", "--", kRuntimeProgram, "alloc_mib", "{mib}"},
          {{"LD_LIBRARY_PATH", kFakeDir}, {"MEMWATCH_CUPTI", "off"}});
  EXPECT_NE(host.err.find("mib=1: exit 0, host_peak_bytes"), std::string::npos) << host.err;
  EXPECT_NE(host.out.find("the runs' peaks hardly differ"), std::string::npos) << host.out;
}

}  // namespace
