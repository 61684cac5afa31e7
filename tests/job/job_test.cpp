// A run is its job: the process tree under the first shimmed process. Python parents that fork
// children holding numpy arrays of known sizes, a gloo DDP job of two ranks started by
// torch.multiprocessing.spawn, a bash wrapper with its helpers, and a killed member; the job's
// peak must be the peak of the simultaneous sum, each block counted once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon_process.hpp"

namespace memwatch {
namespace {

using nlohmann::json;

const std::string kShim = MEMWATCH_SHIM_PATH;
const std::string kCli = MEMWATCH_CLI_PATH;
const std::string kPrograms = MEMWATCH_PROGRAMS_DIR;
const std::string kPython = "/usr/bin/python3";
constexpr std::int64_t MiB = 1 << 20;

// What a Python interpreter allocates besides the arrays, in a child, from one run to the next:
// the room each comparison is given.
constexpr std::int64_t kSlack = 6 * MiB;
constexpr double kSlackMiB = 6;

// Bytes in MiB, for comparisons that allow kSlackMiB.
double mib(std::int64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(MiB);
}

struct Job {
  test::Finished finished;
  json report;
  json job;  // report["job"]
};

Job run_job(const std::vector<std::string>& argv, test::Environment env = {}) {
  test::TempDir dir;
  env["LD_PRELOAD"] = kShim;
  env["MEMWATCH_REPORT"] = dir.file("report.json");
  env["MEMWATCH_JOB"] = "\x01unset";
  Job j;
  j.finished = test::run(argv, env);
  j.report = json::parse(test::read_file(dir.file("report.json")), nullptr, false);
  if (j.report.is_object() && j.report.contains("job")) j.job = j.report["job"];
  return j;
}

Job fork_arrays(const std::string& mode, int parent_mib, int child_mib) {
  return run_job({kPython, kPrograms + "/fork_arrays.py", mode, std::to_string(parent_mib),
                  std::to_string(child_mib)});
}

std::int64_t bytes(const json& v) {
  return v.get<std::int64_t>();
}

std::vector<json> members_joined_by(const json& job, const std::string& how) {
  std::vector<json> found;
  for (const json& m : job["members"])
    if (m["joined"] == how) found.push_back(m);
  return found;
}

// What a forked member added to the job at its own peak: beyond the heap it inherited.
std::int64_t added_by(const json& member) {
  return bytes(member["host_peak_bytes"]) - bytes(member["inherited_bytes"]);
}

TEST(Job, ForkedChildrenHoldingAtOnceAddTheirOwnArraysAndTheParentsHeapOnce) {
  const Job j = fork_arrays("together", 100, 60);
  ASSERT_EQ(j.finished.exit_code, 0) << j.finished.err;
  ASSERT_TRUE(j.job.is_object()) << j.report.dump();
  EXPECT_EQ(j.job["processes"], 3);
  const auto children = members_joined_by(j.job, "fork");
  ASSERT_EQ(children.size(), 2u) << j.job.dump();
  const std::int64_t parent = bytes(j.report["host"]["peak_bytes"]);
  std::int64_t sum_of_reports = parent;
  for (const json& child : children) {
    // A child's own figure includes the parent's 100 MiB it inherited ...
    EXPECT_GE(bytes(child["inherited_bytes"]), 100 * MiB);
    EXPECT_NEAR(mib(added_by(child)), mib(60 * MiB), kSlackMiB);
    EXPECT_EQ(child["state"], "exited");
    sum_of_reports += bytes(child["host_peak_bytes"]);
  }
  // ... which the job counts once: the parent, and each child's 60 MiB at the same moment.
  const std::int64_t job_peak = bytes(j.job["host_peak_bytes"]);
  EXPECT_GE(job_peak, (100 + 2 * 60) * MiB);
  EXPECT_NEAR(mib(job_peak), mib(parent + added_by(children[0]) + added_by(children[1])),
              kSlackMiB);
  EXPECT_LT(job_peak, sum_of_reports - 200 * MiB);
}

TEST(Job, ChildrenHoldingAtDifferentMomentsAreNotAdded) {
  const Job j = fork_arrays("apart", 100, 60);
  ASSERT_EQ(j.finished.exit_code, 0) << j.finished.err;
  ASSERT_TRUE(j.job.is_object()) << j.report.dump();
  EXPECT_EQ(j.job["processes"], 3);
  const std::int64_t parent = bytes(j.report["host"]["peak_bytes"]);
  const std::int64_t job_peak = bytes(j.job["host_peak_bytes"]);
  EXPECT_GE(job_peak, (100 + 60) * MiB);
  EXPECT_LT(job_peak, parent + 60 * MiB + kSlack);
}

TEST(Job, AKilledMembersMemoryLeavesTheJob) {
  const Job j = fork_arrays("killed", 100, 80);
  ASSERT_EQ(j.finished.exit_code, 0) << j.finished.err;
  ASSERT_TRUE(j.job.is_object()) << j.report.dump();
  const auto children = members_joined_by(j.job, "fork");
  ASSERT_EQ(children.size(), 1u) << j.job.dump();
  EXPECT_EQ(children[0]["state"], "gone");
  // The parent allocated 80 MiB again after the child died holding 80: the peak holds one of
  // them, not both. The root's own peak already holds its second array.
  const std::int64_t parent = bytes(j.report["host"]["peak_bytes"]);
  EXPECT_GE(bytes(j.job["host_peak_bytes"]), parent);
  EXPECT_LT(bytes(j.job["host_peak_bytes"]), parent + kSlack);
}

TEST(Job, TwoDdpRanksSpawnedByTorchAreBothInTheJobAtOnce) {
  test::TempDir dir;
  auto ddp = [&](int rank0_mib, int rank1_mib, const std::string& rendezvous) {
    return run_job({kPython, kPrograms + "/ddp_spawn.py", std::to_string(rank0_mib),
                    std::to_string(rank1_mib), dir.file(rendezvous)});
  };
  const Job small = ddp(0, 0, "small");
  const Job held = ddp(192, 96, "held");
  for (const Job* j : {&small, &held}) {
    ASSERT_EQ(j->finished.exit_code, 0) << j->finished.err;
    ASSERT_TRUE(j->job.is_object()) << j->report.dump();
    EXPECT_GE(j->job["processes"].get<int>(), 3);  // the launcher and two ranks (and a tracker)
  }
  // Both ranks' tensors at the barrier: the job's peak grows by their sum.
  const std::int64_t grown =
      bytes(held.job["host_peak_bytes"]) - bytes(small.job["host_peak_bytes"]);
  EXPECT_NEAR(mib(grown), mib((192 + 96) * MiB), 2 * kSlackMiB);
  std::vector<std::int64_t> rank_peaks;
  for (const json& m : members_joined_by(held.job, "exec"))
    if (bytes(m["host_peak_bytes"]) > 90 * MiB) rank_peaks.push_back(bytes(m["host_peak_bytes"]));
  EXPECT_EQ(rank_peaks.size(), 2u) << held.job.dump();
  EXPECT_NE(held.finished.out.find("rank 0"), std::string::npos);
  EXPECT_NE(held.finished.out.find("rank 1"), std::string::npos);
}

TEST(Job, AProgramThatExecsItselfStaysTheRoot) {
  const Job j = run_job(
      {"/bin/sh", "-c", "exec " + kPython + " " + kPrograms + "/fork_arrays.py apart 100 60"});
  ASSERT_EQ(j.finished.exit_code, 0) << j.finished.err;
  ASSERT_TRUE(j.job.is_object()) << j.report.dump();
  EXPECT_EQ(j.job["processes"], 3);  // the shell's image was replaced, not added
  EXPECT_EQ(j.report["workload"], "fork_arrays");
  EXPECT_EQ(members_joined_by(j.job, "root").size(), 1u);
  const std::int64_t parent = bytes(j.report["host"]["peak_bytes"]);
  EXPECT_NEAR(mib(bytes(j.job["host_peak_bytes"])), mib(parent + 60 * MiB), kSlackMiB);
}

// A wrapper script's helpers (mktemp, cat, rm) are members of the job, never runs of their own:
// the daemon hears of one run, the wrapper's, whose figures are the job's.
TEST(Job, TheDaemonStoresTheWrapperAndItsHelpersAsOneRun) {
  test::TempDir dir;
  test::Daemon daemon(dir.path());
  const Job j = run_job({kPrograms + "/wrapper.sh", "100", "60"},
                        {{"MEMWATCH_ENDPOINT", daemon.ingest()}, {"MEMWATCH_WORKLOAD", "wrapped"}});
  ASSERT_EQ(j.finished.exit_code, 0) << j.finished.err;
  ASSERT_TRUE(j.job.is_object()) << j.report.dump();
  std::vector<std::string> names;
  for (const json& m : j.job["members"]) names.push_back(m["name"]);
  for (const char* helper : {"mktemp", "dirname", "cat", "rm", "fork_arrays"})
    EXPECT_NE(std::find(names.begin(), names.end(), helper), names.end()) << helper;
  EXPECT_EQ(j.job["processes"], 8);  // the wrapper, four helpers, python and its two children

  const json runs =
      daemon.wait_runs("wrapped", [](const json& r) { return test::all_finished(r, 1); });
  ASSERT_TRUE(test::all_finished(runs, 1)) << runs.dump();
  EXPECT_EQ(runs[0]["host_peak_bytes"], j.job["host_peak_bytes"]);
  EXPECT_EQ(runs[0]["processes"], 8);
  // No helper became a workload of its own: one workload, one run.
  const json all = daemon.ask({{"op", "workloads"}});
  ASSERT_EQ(all.value("ok", false), true) << all.dump();
  ASSERT_EQ(all["workloads"].size(), 1u) << all.dump();
  EXPECT_EQ(all["workloads"][0]["workload"], "wrapped");
  EXPECT_EQ(all["workloads"][0]["runs"], 1);
}

// A sweep row is a job: its host_peak_bytes column is the job's, whatever ran it inside.
TEST(Job, TheSweepsColumnsAreTheJobs) {
  test::TempDir dir;
  const test::Finished swept = test::run(
      {kCli, "sweep", "--shim", kShim, "--grid", "child=40,80", "--out", dir.file("runs.csv"), "--",
       kPython, kPrograms + "/fork_arrays.py", "together", "50", "{child}"},
      {{"MEMWATCH_JOB", "\x01unset"}});
  ASSERT_EQ(swept.exit_code, 0) << swept.err;
  const auto rows = test::read_csv(dir.file("runs.csv"));
  ASSERT_EQ(rows.size(), 2u);
  std::vector<std::int64_t> peaks;
  for (const test::CsvRow& row : rows) {
    peaks.push_back(std::stoll(row.at("host_peak_bytes")));
    EXPECT_EQ(row.at("processes"), "3");
  }
  // Two children of 80 MiB instead of 40, at once: 80 MiB more in the job.
  EXPECT_NEAR(mib(peaks[1] - peaks[0]), mib(80 * MiB), kSlackMiB);
}

}  // namespace
}  // namespace memwatch
