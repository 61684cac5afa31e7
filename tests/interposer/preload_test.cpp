// libmemwatch.so preloaded into real programs with known allocation patterns: the report must
// give exactly the peaks the program computes for itself, on every path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "counting/segment.hpp"
#include "process.hpp"

using nlohmann::json;
using namespace memwatch::test;

namespace {

const std::string kShim = MEMWATCH_SHIM_PATH;
const std::string kPatterns = MEMWATCH_PATTERNS_PATH;
const std::string kPython = "/usr/bin/python3";
const std::string kTrainPy = std::string(MEMWATCH_SOURCE_DIR) + "/workloads/unet3d/train.py";

struct Measured {
  Finished run;
  json report;    // the report of the process that was started
  json expected;  // the last JSON line the program printed, if any
};

Measured measure(const std::vector<std::string>& argv, Environment env = {}) {
  TempDir dir;
  env["LD_PRELOAD"] = kShim;
  env["MEMWATCH_REPORT"] = dir.file("report.%p.json");
  Measured m;
  m.run = run(argv, env);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const json r = json::parse(read_file(entry.path().string()));
    if (m.report.is_null() || r["pid"].get<int>() < m.report["pid"].get<int>()) m.report = r;
  }
  const auto last_brace = m.run.out.rfind("\n{");
  const std::string last_line =
      m.run.out.substr(last_brace == std::string::npos ? 0 : last_brace + 1);
  if (!last_line.empty() && last_line[0] == '{') m.expected = json::parse(last_line);
  return m;
}

std::int64_t baseline_heap() {
  static const std::int64_t baseline = [] {
    const Measured none = measure({kPatterns, "none"});
    return none.report["host"]["heap_live_bytes"].get<std::int64_t>();
  }();
  return baseline;
}

std::int64_t heap_peak(const Measured& m) {
  return m.report["host"]["heap_peak_bytes"];
}

TEST(Preload, EveryHeapPathGivesTheExactPeak) {
  const Measured m = measure({kPatterns, "heap_paths"}, {{"MEMWATCH_BATCH_BYTES", "0"}});
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_EQ(m.run.err, "");
  EXPECT_EQ(heap_peak(m), baseline_heap() + m.expected["peak"].get<std::int64_t>());
  EXPECT_EQ(m.report["host"]["heap_live_bytes"].get<std::int64_t>(), baseline_heap());
}

// python3 is a C program: the shim must bring no operator new of its own into its global scope
// (a shared libjemalloc did), so that its C++ libraries' blocks are counted and freed by the
// allocator that made them.
TEST(Preload, OperatorNewOfACxxRuntimeLoadedLaterIsCountedInBothModes) {
  for (const char* allocator : {"system", "jemalloc"}) {
    const Measured m = measure({kPatterns, "cxx_new_after_dlopen"},
                               {{"MEMWATCH_BATCH_BYTES", "0"}, {"MEMWATCH_ALLOCATOR", allocator}});
    ASSERT_EQ(m.run.exit_code, 0) << allocator << ": " << m.run.err;
    const std::int64_t expected = m.expected["peak"];
    EXPECT_GE(expected, 24 << 20) << allocator;
    // The runtime's own start-up allocations come on top, and stay: at most a few hundred KiB.
    EXPECT_GE(heap_peak(m) - baseline_heap(), expected) << allocator;
    EXPECT_LT(heap_peak(m) - baseline_heap(), expected + (1 << 20)) << allocator;
  }
}

TEST(Preload, BatchedSmallBlocksStayWithinTheStatedBound) {
  const Measured m = measure({kPatterns, "heap_paths"});
  const std::int64_t exact = baseline_heap() + m.expected["peak"].get<std::int64_t>();
  const std::int64_t bound = m.report["host"]["error_bound_bytes"];
  EXPECT_GT(bound, 0);
  EXPECT_LE(std::llabs(heap_peak(m) - exact), bound);
}

TEST(Preload, JemallocHostingGivesExactPeaksToo) {
  const Measured m = measure({kPatterns, "heap_paths"},
                             {{"MEMWATCH_BATCH_BYTES", "0"}, {"MEMWATCH_ALLOCATOR", "jemalloc"}});
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_EQ(m.report["allocator"], "jemalloc");
  const Measured none = measure({kPatterns, "none"}, {{"MEMWATCH_ALLOCATOR", "jemalloc"}});
  EXPECT_EQ(heap_peak(m), none.report["host"]["heap_live_bytes"].get<std::int64_t>() +
                              m.expected["peak"].get<std::int64_t>());
}

TEST(Preload, AnonymousMappingsBesideTheHeapWithPartialUnmapAndRemap) {
  const Measured m = measure({kPatterns, "mmap_beside_heap"});
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_EQ(m.report["host"]["mmap_peak_bytes"], m.expected["mmap_peak"]);
  EXPECT_EQ(m.report["host"]["mmap_live_bytes"], 0);
  EXPECT_EQ(heap_peak(m), baseline_heap() + m.expected["peak"].get<std::int64_t>());
  // The peak of the sum, not the sum of the peaks.
  EXPECT_EQ(m.report["host"]["peak_bytes"].get<std::int64_t>(),
            baseline_heap() + m.expected["host_peak"].get<std::int64_t>());
}

TEST(Preload, TwoThreadsHoldingAtOnce) {
  const Measured m = measure({kPatterns, "threads_hold"});
  ASSERT_EQ(m.run.exit_code, 0);
  EXPECT_EQ(heap_peak(m), baseline_heap() + m.expected["peak"].get<std::int64_t>());
  EXPECT_GE(m.report["threads_peak"].get<int>(), 3);
}

TEST(Preload, FreedOnAnotherThread) {
  const Measured m = measure({kPatterns, "cross_thread_free"});
  EXPECT_EQ(heap_peak(m), baseline_heap() + m.expected["peak"].get<std::int64_t>());
  // All ten blocks are gone; glibc keeps a few hundred bytes of its own per thread it made.
  EXPECT_LE(std::llabs(m.report["host"]["heap_live_bytes"].get<std::int64_t>() - baseline_heap()),
            1024);
}

TEST(Preload, NeverFreedStaysLiveAtExit) {
  const Measured m = measure({kPatterns, "never_free"});
  EXPECT_EQ(m.report["host"]["heap_live_bytes"].get<std::int64_t>(),
            baseline_heap() + m.expected["live"].get<std::int64_t>());
  EXPECT_GE(m.report["rss_hwm_bytes"].get<std::int64_t>(), 5 << 20);
}

TEST(Preload, AForkedChildStartsFromWhatItInheritsAndWritesItsOwnReport) {
  TempDir dir;
  const Finished f =
      run({kPatterns, "fork"}, {{"LD_PRELOAD", kShim}, {"MEMWATCH_REPORT", dir.file("r.%p.json")}});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const auto first_line = f.out.substr(0, f.out.find('\n'));
  const json child_said = json::parse(first_line);
  const json parent_said = json::parse(f.out.substr(f.out.find('\n') + 1));
  const int child_pid = child_said["child"];
  const json child = json::parse(read_file(dir.file("r." + std::to_string(child_pid) + ".json")));
  EXPECT_EQ(child["host"]["heap_peak_bytes"].get<std::int64_t>(),
            baseline_heap() + child_said["peak"].get<std::int64_t>());
  int parent_reports = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const json r = json::parse(read_file(entry.path().string()));
    if (r["pid"] == child_pid) continue;
    ++parent_reports;
    // The child's allocations are not the parent's.
    EXPECT_EQ(r["host"]["heap_peak_bytes"].get<std::int64_t>(),
              baseline_heap() + parent_said["peak"].get<std::int64_t>());
  }
  EXPECT_EQ(parent_reports, 1);
}

TEST(Preload, AnExecdProgramIsMeasuredAsItself) {
  const Measured m = measure({kPatterns, "exec"});
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_EQ(m.expected["preload"], "set");
  // One report for the pid: the exec'd image's, without the 16 MiB its predecessor held.
  EXPECT_EQ(heap_peak(m), baseline_heap() + m.expected["peak"].get<std::int64_t>());
}

TEST(Preload, ExitFromAnotherThreadStillWritesTheReport) {
  const Measured m = measure({kPatterns, "exit_from_thread"});
  EXPECT_EQ(m.run.exit_code, 7);
  ASSERT_FALSE(m.report.is_null());
  EXPECT_EQ(m.report["exit"]["cause"], "exit");
  EXPECT_GE(heap_peak(m), baseline_heap() + (3 << 20));
}

TEST(Preload, AFatalSignalWritesTheReportAndStillKillsTheProgram) {
  const Measured m = measure({kPatterns, "abort"});
  EXPECT_TRUE(m.run.signaled);
  EXPECT_EQ(m.run.signal, SIGABRT);
  ASSERT_FALSE(m.report.is_null());
  EXPECT_EQ(m.report["exit"]["cause"], "signal");
  EXPECT_EQ(m.report["exit"]["signal"], SIGABRT);
  EXPECT_GE(heap_peak(m), baseline_heap() + (6 << 20));
  memwatch::shim::segment_remove(m.report["pid"].get<int>());
}

TEST(Preload, UnderscoreExitWritesTheReportWithItsStatus) {
  const Measured m = measure({kPatterns, "underscore_exit"});
  EXPECT_EQ(m.run.exit_code, 5);
  ASSERT_FALSE(m.report.is_null());
  EXPECT_EQ(m.report["exit"]["cause"], "_exit");
  EXPECT_EQ(m.report["exit"]["status"], 5);
  EXPECT_GE(heap_peak(m), baseline_heap() + (2 << 20));
}

TEST(Preload, AVforkChildsExitLeavesTheParentsReportToTheParent) {
  const Measured m = measure({kPatterns, "vfork"});
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  ASSERT_FALSE(m.report.is_null());
  EXPECT_EQ(m.report["exit"]["cause"], "exit");
  EXPECT_EQ(heap_peak(m), baseline_heap() + m.expected["peak"].get<std::int64_t>());
}

TEST(Preload, SigtermWritesTheReportAndTheProgramStillDiesOfIt) {
  TempDir dir;
  const std::string report = dir.file("r.json");
  Running program({kPatterns, "hold"}, {{"LD_PRELOAD", kShim}, {"MEMWATCH_REPORT", report}});
  ASSERT_EQ(program.read_line(), "ready");
  program.signal(SIGTERM);
  const pid_t pid = program.pid();
  const Finished end = program.wait();
  EXPECT_TRUE(end.signaled);
  EXPECT_EQ(end.signal, SIGTERM);
  const json r = json::parse(read_file(report));
  EXPECT_EQ(r["exit"]["signal"], SIGTERM);
  EXPECT_GE(r["host"]["heap_peak_bytes"].get<std::int64_t>(), 20 << 20);
  memwatch::shim::segment_remove(pid);
}

TEST(Preload, ASigkilledProcessLeavesItsLastValuesInSharedMemory) {
  Running program({kPatterns, "hold"}, {{"LD_PRELOAD", kShim}});
  ASSERT_EQ(program.read_line(), "ready");  // it holds 20 MiB now
  const pid_t pid = program.pid();
  const auto alive = memwatch::shim::segment_read(pid);
  ASSERT_TRUE(alive.has_value());
  EXPECT_GE(alive->heap_live, 20 << 20);
  program.signal(SIGKILL);
  program.wait();
  const auto dead = memwatch::shim::segment_read(pid);
  ASSERT_TRUE(dead.has_value());
  EXPECT_FALSE(dead->exited);
  EXPECT_EQ(dead->heap_live, alive->heap_live);
  EXPECT_GE(dead->heap_peak, 20 << 20);
  memwatch::shim::segment_remove(pid);
}

TEST(Preload, ACleanExitRemovesTheSegment) {
  const Measured m = measure({kPatterns, "never_free"});
  EXPECT_FALSE(memwatch::shim::segment_read(m.report["pid"].get<int>()).has_value());
}

TEST(Preload, ErrnoIsPreserved) {
  const Measured m = measure({kPatterns, "errno"});
  EXPECT_EQ(m.expected["errno_kept"], 1);
  EXPECT_EQ(m.expected["error_reported"], 1);
}

TEST(Preload, TheProgramsOutputIsUnchanged) {
  const Finished plain = run({kPatterns, "checksum"});
  for (const char* allocator : {"system", "jemalloc"}) {
    const Measured m = measure({kPatterns, "checksum"}, {{"MEMWATCH_ALLOCATOR", allocator}});
    EXPECT_EQ(m.run.out, plain.out) << allocator;
    EXPECT_EQ(m.run.exit_code, plain.exit_code);
  }
}

TEST(Preload, ParamsAndWorkloadFromTheEnvironmentAndTheProgramsFlags) {
  const Measured m =
      measure({kPatterns, "none", "--filters=16"}, {{"MEMWATCH_PARAMS", "batch=4,dim=128"},
                                                    {"MEMWATCH_ARGV_PARAMS", "--filters:filters"},
                                                    {"MEMWATCH_WORKLOAD", "unet3d"}});
  EXPECT_EQ(m.report["workload"], "unet3d");
  EXPECT_EQ(m.report["params"], json::parse(R"({"batch":4,"dim":128,"filters":16})"));
}

TEST(Preload, BadEnvironmentValuesGiveOneLineEachAndTheProgramRunsOn) {
  const Finished plain = run({kPatterns, "checksum"});
  const Measured m = measure({kPatterns, "checksum"}, {{"MEMWATCH_PARAMS", "batch=four"},
                                                       {"MEMWATCH_CAPACITY", "host=lots"},
                                                       {"MEMWATCH_ON_OOM", "maybe"}});
  EXPECT_EQ(m.run.out, plain.out);
  EXPECT_EQ(m.run.exit_code, 0);
  int lines = 0;
  for (char c : m.run.err) lines += c == '\n';
  EXPECT_EQ(lines, 3) << m.run.err;
  for (const char* variable : {"MEMWATCH_PARAMS", "MEMWATCH_CAPACITY", "MEMWATCH_ON_OOM"})
    EXPECT_NE(m.run.err.find(std::string("memwatch: ") + variable), std::string::npos);
  EXPECT_TRUE(m.report["params"].empty());
}

TEST(Preload, PythonUnderTheShim) {
  const Measured idle = measure({kPython, "-c", "pass"});
  const Measured big = measure({kPython, "-c", "x = bytearray(200 * 2**20)"});
  ASSERT_EQ(big.run.exit_code, 0) << big.run.err;
  EXPECT_EQ(big.report["workload"], "python3");
  // The interpreter's own start-up peak differs by a few KiB between the two runs.
  const std::int64_t extra = heap_peak(big) - heap_peak(idle);
  EXPECT_LE(std::llabs(extra - (200 << 20)), 1 << 20);
}

TEST(Preload, PythonNumpyAndThreadsUnderTheShim) {
  const Measured m = measure({kPython, "-c",
                              "import numpy, threading\n"
                              "def work():\n"
                              "    a = numpy.ones((1024, 1024, 16))\n"  // 128 MiB
                              "    del a\n"
                              "ts = [threading.Thread(target=work) for _ in range(2)]\n"
                              "[t.start() for t in ts]; [t.join() for t in ts]\n"
                              "print('done')"});
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_EQ(m.run.out, "done\n");
  EXPECT_GE(m.report["host"]["peak_bytes"].get<std::int64_t>(), std::int64_t{128} << 20);
  EXPECT_LE(m.report["host"]["peak_bytes"].get<std::int64_t>(),
            m.report["rss_hwm_bytes"].get<std::int64_t>() + (std::int64_t{256} << 20));
}

// The README's Python quick start with the trainer's own YAML file: the run is named by the
// script and its parameters come from the file (a shape's product is the patch's volume), the
// DataLoader's worker processes write their own reports.
TEST(Preload, APythonTrainersConfigFileGivesItsParametersAndTheScriptItsName) {
  TempDir dir;
  const std::string config = dir.file("train.yml");
  std::ofstream(config) << "batch_size: 2\nshape: [16, 16, 32]\nlevels: 3\nfilters: 4\nsteps: 2\n";
  const Measured m = measure({kPython, kTrainPy, "--config", config, "--workers", "1"},
                             {{"MEMWATCH_CONFIG_PARAMS",
                               "--config:batch_size:batch,--config:shape:volume,"
                               "--config:shape[2]:width,--config:epochs:epochs"}});
  ASSERT_EQ(m.run.exit_code, 0) << m.run.err;
  EXPECT_EQ(m.report["workload"], "train");
  EXPECT_EQ(m.report["params"]["batch"], 2);
  EXPECT_EQ(m.report["params"]["volume"], 16 * 16 * 32);
  EXPECT_EQ(m.report["params"]["width"], 32);
  EXPECT_FALSE(m.report["params"].contains("epochs"));
  EXPECT_NE(m.run.err.find("MEMWATCH_CONFIG_PARAMS: " + config + ": 'epochs' is not in it"),
            std::string::npos)
      << m.run.err;
  EXPECT_EQ(m.expected["workers"], 1);
  EXPECT_GT(m.report["host"]["peak_bytes"].get<std::int64_t>(), 20 << 20);
}

}  // namespace
