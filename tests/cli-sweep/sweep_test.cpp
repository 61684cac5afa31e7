// memwatch sweep over sweep-helper: rows, statuses of failed and killed runs, repeat, resume,
// interruption, usage errors; and with the real shim, peaks that follow the allocation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "memwatch/model/table_parse.hpp"
#include "memwatch/protocol/figures.hpp"
#include "process.hpp"

namespace {

namespace fs = std::filesystem;
using memwatch::test::Environment;
using memwatch::test::Finished;
using memwatch::test::lines_of;
using memwatch::test::read_file;
using memwatch::test::run;
using memwatch::test::Running;
using memwatch::test::TempDir;

using Row = memwatch::test::CsvRow;
using memwatch::test::read_csv;

// sweep ARGS -- sweep-helper HELPER_ARGS, over the empty stand-in for the shim.
Finished sweep(std::vector<std::string> args, const std::vector<std::string>& helper_args,
               const std::string& shim = STUB_PRELOAD) {
  std::vector<std::string> argv{MEMWATCH_BIN, "sweep", "--shim", shim};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--");
  argv.push_back(SWEEP_HELPER);
  argv.insert(argv.end(), helper_args.begin(), helper_args.end());
  return run(argv);
}

TEST(Sweep, WritesOneRowPerCombinationWithItsParameters) {
  TempDir dir;
  auto o = sweep({"--grid", "mib=1,2", "--grid", "code=0,7", "--out", dir.file("runs.csv")},
                 {"{mib}", "{code}"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(lines_of(read_file(dir.file("runs.csv")))[0],
            "mib,code,host_peak_bytes,heap_peak_bytes,mmap_peak_bytes,device_peak_bytes,"
            "pinned_peak_bytes,managed_peak_bytes,rss_hwm_bytes,processes,elapsed_s,exit_status");
  auto rows = read_csv(dir.file("runs.csv"));
  ASSERT_EQ(rows.size(), 4u);
  const std::vector<std::pair<std::string, std::string>> order{
      {"1", "0"}, {"1", "7"}, {"2", "0"}, {"2", "7"}};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["mib"], order[i].first);
    EXPECT_EQ(rows[i]["code"], order[i].second);
    // The helper exits with {code}; 3 would mean the sweep left out the environment.
    EXPECT_EQ(rows[i]["exit_status"], order[i].second);
    EXPECT_FALSE(rows[i]["rss_hwm_bytes"].empty());
    EXPECT_GE(std::stod(rows[i]["elapsed_s"]), 0.0);
  }
  // Progress on stderr: done/total, elapsed and an estimate.
  EXPECT_NE(o.err.find("[4/4]"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("elapsed"), std::string::npos);
  EXPECT_NE(o.err.find("left"), std::string::npos);
  // A failed run's last output lines are shown.
  EXPECT_NE(o.err.find("sweep-helper: exiting with 7"), std::string::npos) << o.err;
}

TEST(Sweep, EveryPlaceholderInAWordIsReplaced) {
  TempDir dir;
  auto o = run({MEMWATCH_BIN, "sweep", "--shim", STUB_PRELOAD, "--grid", "a=1,2", "--grid", "b=5",
                "--out", dir.file("w.csv"), "--", "sh", "-c", "exit $0", "{a}{b}{a}"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto rows = read_csv(dir.file("w.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["exit_status"], "151");
  EXPECT_EQ(rows[1]["exit_status"], "252");
}

TEST(Sweep, KilledAndTimedOutRunsAreRowsWithMinusTheSignal) {
  TempDir dir;
  auto o = sweep({"--grid", "mib=1", "--out", dir.file("abort.csv")}, {"{mib}", "abort"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto rows = read_csv(dir.file("abort.csv"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["exit_status"], std::to_string(-SIGABRT));

  const auto start = std::chrono::steady_clock::now();
  o = sweep({"--grid", "mib=1", "--timeout", "0.5", "--out", dir.file("sleep.csv")},
            {"{mib}", "sleep"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  rows = read_csv(dir.file("sleep.csv"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["exit_status"], std::to_string(-SIGKILL));
}

TEST(Sweep, RepeatRunsEachPointThatManyTimes) {
  TempDir dir;
  auto o = sweep({"--grid", "mib=1,2", "--repeat", "3", "--out", dir.file("r.csv")}, {"{mib}"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto rows = read_csv(dir.file("r.csv"));
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[2]["mib"], "1");
  EXPECT_EQ(rows[3]["mib"], "2");
}

TEST(Sweep, ResumeRunsOnlyWhatTheFileLacks) {
  TempDir dir;
  const auto out = dir.file("runs.csv");
  auto o = sweep({"--grid", "mib=1,2", "--out", out}, {"{mib}"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string first = read_file(out);

  // Without --resume an existing file is never overwritten.
  o = sweep({"--grid", "mib=1,2", "--out", out}, {"{mib}"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(read_file(out), first);

  // A wider grid, written 2.0 for 2: only the new point runs, and the old rows stay as they were.
  o = sweep({"--grid", "mib=1,2.0,3", "--out", out, "--resume"}, {"{mib}"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("1 runs to do (2 already in"), std::string::npos) << o.err;
  auto rows = read_csv(out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2]["mib"], "3");
  EXPECT_EQ(read_file(out).substr(0, first.size()), first);

  // A row cut short by a crash is dropped and its run done again.
  {
    std::ofstream append(out, std::ios::app);
    append << "4,123";
  }
  o = sweep({"--grid", "mib=4", "--out", out, "--resume"}, {"{mib}"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  rows = read_csv(out);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[3]["mib"], "4");
  EXPECT_EQ(rows[3]["exit_status"], "0");

  // Other parameter names cannot share the file.
  o = sweep({"--grid", "size=1", "--out", out, "--resume"}, {"{size}"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("same parameter names"), std::string::npos) << o.err;
}

TEST(Sweep, AnInterruptedSweepKeepsWholeRowsAndResumes) {
  TempDir dir;
  const auto out = dir.file("runs.csv");
  // The second point sleeps until the interrupt arrives.
  const std::string script = "case {mode} in 1) exec " + std::string(SWEEP_HELPER) +
                             " 1 0;; 2) exec " + SWEEP_HELPER + " 1 sleep;; *) exec " +
                             SWEEP_HELPER + " 1 0;; esac";
  Running sweeping({MEMWATCH_BIN, "sweep", "--shim", STUB_PRELOAD, "--grid", "mode=1,2,3", "--out",
                    out, "--", "/bin/sh", "-c", script},
                   {}, Running::Stderr::discard);
  // Wait for the first row, then a moment for the second run to start sleeping.
  for (int i = 0; i < 200 && read_csv(out).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  sweeping.signal(SIGINT);
  const Finished end = sweeping.wait();
  ASSERT_FALSE(end.signaled);
  EXPECT_EQ(end.exit_code, 128 + SIGINT);
  auto rows = read_csv(out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["mode"], "1");

  // The resumed sweep does the interrupted point and the one after it (here without sleeping).
  auto o = sweep({"--grid", "mode=1,2,3", "--out", out, "--resume"}, {"1", "0"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  rows = read_csv(out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1]["mode"], "2");
  EXPECT_EQ(rows[2]["mode"], "3");
}

TEST(Sweep, ACommandThatCannotStartStopsTheSweepWithoutARow) {
  TempDir dir;
  const auto out = dir.file("runs.csv");
  auto o = run({MEMWATCH_BIN, "sweep", "--shim", STUB_PRELOAD, "--grid", "mib=1,2", "--out", out,
                "--", dir.file("no-such-program"), "{mib}"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("cannot run"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("No such file"), std::string::npos) << o.err;
  EXPECT_TRUE(read_csv(out).empty());
}

TEST(Sweep, UsageErrorsExitTwoBeforeRunningAnything) {
  TempDir dir;
  const auto out = dir.file("u.csv");
  const std::vector<std::vector<std::string>> bad{
      {"--grid", "mib=1", "--out", out},                        // no command
      {"--grid", "mib=1,x", "--out", out, "--", SWEEP_HELPER},  // not a number
      {"--grid", "mib", "--out", out, "--", SWEEP_HELPER},      // no values
      {"--grid", "mib=1", "--grid", "mib=2", "--out", out, "--", SWEEP_HELPER},
      {"--grid", "mib=1", "--out", out, "--", SWEEP_HELPER, "{mb}"},  // unknown placeholder
      {"--grid", "mib=1", "--", SWEEP_HELPER},                        // no --out
      {"--grid", "mib=1", "--out", out, "--repeat", "0", "--", SWEEP_HELPER},
      {"--grid", "mib=1", "--out", out, "--bogus", "--", SWEEP_HELPER},
  };
  for (const auto& args : bad) {
    std::vector<std::string> argv{MEMWATCH_BIN, "sweep", "--shim", STUB_PRELOAD};
    argv.insert(argv.end(), args.begin(), args.end());
    auto o = run(argv);
    EXPECT_EQ(o.exit_code, 2) << args[args.size() > 4 ? 4 : 0] << "\n" << o.err;
    EXPECT_EQ(lines_of(o.err).size(), 1u) << o.err;
    EXPECT_FALSE(fs::exists(out));
  }
  auto o = run({MEMWATCH_BIN, "sweep", "--shim", dir.file("none.so"), "--grid", "mib=1", "--out",
                out, "--", SWEEP_HELPER, "{mib}"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("libmemwatch.so not found at"), std::string::npos) << o.err;
}

// The modeler takes every column it does not know as a measurement for a parameter: the sweep's
// columns after its parameters must be exactly the measurements the modeler knows.
TEST(Sweep, ItsMeasureColumnsAreExactlyTheOnesTheModelerKnows) {
  TempDir dir;
  auto o = sweep({"--grid", "mib=1", "--out", dir.file("runs.csv")}, {"{mib}", "0"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::vector<std::string> header;
  std::string line = lines_of(read_file(dir.file("runs.csv")))[0];
  for (std::size_t at; (at = line.find(',')) != std::string::npos; line.erase(0, at + 1))
    header.push_back(line.substr(0, at));
  header.push_back(line);
  ASSERT_EQ(header.front(), "mib");
  const std::vector<std::string> measured(header.begin() + 1, header.end());
  const auto& known = memwatch::model::measurement_columns();
  for (const std::string& column : known)
    EXPECT_NE(std::find(measured.begin(), measured.end(), column), measured.end())
        << "the modeler expects '" << column << "', the sweep does not write it";
  for (const std::string& column : measured)
    EXPECT_NE(std::find(known.begin(), known.end(), column), known.end())
        << "the sweep writes '" << column << "', which the modeler would take for a parameter";
  // ... and every run figure is one of them.
  for (const memwatch::protocol::Figure& f : memwatch::protocol::kFigures) {
    if (!f.run) continue;
    EXPECT_NE(std::find(measured.begin(), measured.end(), f.name), measured.end()) << f.name;
  }
}

#ifdef SHIM_PATH
TEST(SweepUnderShim, PeaksFollowTheAllocation) {
  TempDir dir;
  // No --shim: the sweep finds libmemwatch.so beside its own binary, in ../lib.
  auto o = run({MEMWATCH_BIN, "sweep", "--grid", "mib=8,64,256", "--out", dir.file("peaks.csv"),
                "--", SWEEP_HELPER, "{mib}"},
               Environment{{"MEMWATCH_SHIM", "\x01unset"}});
  EXPECT_NE(o.err.find("shim " SHIM_PATH), std::string::npos) << o.err;
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto rows = read_csv(dir.file("peaks.csv"));
  ASSERT_EQ(rows.size(), 3u);
  std::uint64_t last = 0;
  for (auto& row : rows) {
    EXPECT_EQ(row["exit_status"], "0");
    const std::uint64_t mib = std::stoull(row["mib"]) << 20;
    const std::uint64_t host = std::stoull(row["host_peak_bytes"]);
    EXPECT_GE(host, mib);
    EXPECT_LT(host, mib + (16u << 20));
    EXPECT_GE(std::stoull(row["rss_hwm_bytes"]), mib);
    EXPECT_EQ(row["device_peak_bytes"], "0");
    // Every run figure from the report, none left empty.
    for (const memwatch::protocol::Figure& f : memwatch::protocol::kFigures) {
      if (!f.run) continue;
      EXPECT_FALSE(row[std::string(f.name)].empty()) << f.name;
    }
    EXPECT_GT(host, last);
    last = host;
  }
}
#else
TEST(SweepUnderShim, PeaksFollowTheAllocation) {
  GTEST_SKIP() << "this tree builds no shim";
}
#endif

// A trainer configured by a YAML file: each run gets the template with its {name} filled in, at
// the path {config} names; braces that are no grid name (a YAML flow mapping) stay.
TEST(Sweep, AConfigTemplateIsFilledInForEachRunAndNamedByConfig) {
  TempDir dir;
  const std::string yaml = dir.file("train.yml");
  std::ofstream(yaml) << "loaders:\n  batch_size: {batch}\nmodel: {name: UNet3D, f_maps: 8}\n"
                         "patch: [{depth}, 64, 64]\nkeep: {other}\n";
  const Finished o =
      run({MEMWATCH_BIN, "sweep", "--shim", STUB_PRELOAD, "--grid", "batch=2,4", "--grid",
           "depth=16", "--config-template", yaml, "--out", dir.file("runs.csv"), "--", "/bin/sh",
           "-c", "case {config} in *.yml) cp {config} " + dir.path() + "/seen-{batch}.yml;; esac"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(read_csv(dir.file("runs.csv")).size(), 2u);
  for (const std::string batch : {"2", "4"})
    EXPECT_EQ(read_file(dir.file("seen-" + batch + ".yml")),
              "loaders:\n  batch_size: " + batch +
                  "\nmodel: {name: UNet3D, f_maps: 8}\npatch: [16, 64, 64]\nkeep: {other}\n");
}

TEST(Sweep, AConfigTemplateNeedsConfigInTheCommandAndConfigNeedsATemplate) {
  TempDir dir;
  const std::string yaml = dir.file("t.yml");
  std::ofstream(yaml) << "b: {batch}\n";
  const Finished unused = run({MEMWATCH_BIN, "sweep", "--grid", "batch=1", "--config-template",
                               yaml, "--out", dir.file("a.csv"), "--", "/bin/true"});
  EXPECT_EQ(unused.exit_code, 2);
  EXPECT_NE(unused.err.find("--config-template needs {config}"), std::string::npos) << unused.err;
  const Finished missing = run({MEMWATCH_BIN, "sweep", "--grid", "batch=1", "--out",
                                dir.file("b.csv"), "--", "/bin/cat", "{config}"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("give --config-template FILE"), std::string::npos) << missing.err;
  const Finished absent =
      run({MEMWATCH_BIN, "sweep", "--grid", "batch=1", "--config-template", dir.file("none.yml"),
           "--out", dir.file("c.csv"), "--", "/bin/cat", "{config}"});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_NE(absent.err.find(dir.file("none.yml")), std::string::npos) << absent.err;
}

}  // namespace
