// Two memwatchd on one PostgreSQL database (a real server), with real shims: runs reported to
// either are stored once and answered by both, and a model fitted by one answers on the other.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon_process.hpp"
#include "postgres_server.hpp"

namespace memwatch {
namespace {

using nlohmann::json;
using test::Daemon;

const std::string kShim = MEMWATCH_SHIM_PATH;
const std::string kPatterns = MEMWATCH_PATTERNS_PATH;

test::Environment shim_env(const Daemon& d, int mib) {
  return {{"LD_PRELOAD", kShim},
          {"MEMWATCH_ENDPOINT", d.ingest()},
          {"MEMWATCH_WORKLOAD", "grows"},
          {"MEMWATCH_PARAMS", "mib=" + std::to_string(mib)},
          {"MEMWATCH_JOB", "\x01unset"}};
}

TEST(PostgresDaemons, TwoDaemonsShareOneStoreAndItsModels) {
  test::PostgresServer server;
  const std::string store = server.create_database("shared");
  test::TempDir a_dir, b_dir;
  Daemon a(a_dir.path(), test::DaemonSetup{"", "", "", store, {}, ""});
  Daemon b(b_dir.path(), test::DaemonSetup{"", "", "", store, {}, ""});
  // Runs reach one daemon or the other, as shims on different nodes would.
  const int sizes[] = {1, 2, 3, 4, 6, 8, 12, 16};
  for (int i = 0; i < 8; ++i) {
    const Daemon& to = i % 2 == 0 ? a : b;
    const auto r =
        test::run({kPatterns, "alloc_mib", std::to_string(sizes[i])}, shim_env(to, sizes[i]));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (Daemon* d : {&a, &b}) {
    const json runs = d->wait_runs("grows", [](const json& r) { return test::all_finished(r, 8); });
    ASSERT_TRUE(test::all_finished(runs, 8)) << runs.dump();
    // The model of all eight, whichever daemon fitted it last, answers on both.
    const json p = d->wait_model("grows", "host_peak_bytes", {{"mib", 24}}, 8);
    ASSERT_EQ(p["ok"], true) << p.dump() << d->log();
    EXPECT_NEAR(p["peak_bytes"].get<double>() / (1 << 20), 24.5, 1.0);
  }
  // Each daemon counts the other's runs too, once it has caught up with the store (each second).
  const json status =
      a.ask_until({{"op", "status"}}, [](const json& reply) { return reply["runs"] == 8; });
  EXPECT_EQ(status["runs"], 8) << status.dump();
  EXPECT_EQ(a.log().find("refit failed"), std::string::npos) << a.log();
}

// The server stopped (as an operator's restart does) while shims report: every run is still
// acknowledged, `status` says they are queued, and once the server is back each one is stored
// once, with its samples and peaks.
TEST(PostgresDaemons, RunsReportedWhileTheServerRestartsAllReachItOnce) {
  test::PostgresServer server;
  const std::string store = server.create_database("outage");
  test::TempDir dir;
  Daemon daemon(dir.path(), test::DaemonSetup{"", "", "", store, {}, ""});
  for (int mib : {1, 2, 3}) {
    const auto r = test::run({kPatterns, "alloc_mib", std::to_string(mib)}, shim_env(daemon, mib));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Four runs in the middle of their growth (24 MiB by 1 MiB steps) when the server goes.
  std::vector<std::unique_ptr<test::Running>> growing;
  for (int i = 0; i < 4; ++i)
    growing.push_back(std::make_unique<test::Running>(
        std::vector<std::string>{kPatterns, "grow", "24", "1", "40", "300"}, shim_env(daemon, 24)));
  const json running =
      daemon.ask_until({{"op", "status"}}, [](const json& r) { return r["running"] == 4; });
  ASSERT_EQ(running["running"], 4) << running.dump();
  server.stop("fast");

  for (int mib : {4, 6, 8, 12}) {
    const auto r = test::run({kPatterns, "alloc_mib", std::to_string(mib)}, shim_env(daemon, mib));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (auto& g : growing) ASSERT_EQ(g->wait().exit_code, 0);
  const json away = daemon.ask_until({{"op", "status"}}, [](const json& r) {
    return r["running"] == 0 && r["store"]["queued_runs"].get<int>() >= 4;
  });
  EXPECT_EQ(away["runs"], 11) << "every HELLO was answered: " << away.dump();
  EXPECT_EQ(away["store"]["reachable"], false) << away.dump();
  EXPECT_GE(away["store"]["queued_runs"].get<int>(), 4) << away.dump();
  const auto said = test::run({MEMWATCH_CLI_PATH, "status", "--query", daemon.query()});
  EXPECT_NE(said.out.find("unreachable since"), std::string::npos) << said.out << said.err;
  EXPECT_NE(said.out.find("queued locally in " + dir.path() + "/state/queue.db"), std::string::npos)
      << said.out;

  server.start();
  const json back = daemon.ask_until({{"op", "status"}}, [](const json& r) {
    return r["store"]["reachable"] == true && r["store"]["queued_runs"] == 0 &&
           r["store"]["queued_samples"] == 0;
  });
  ASSERT_EQ(back["store"]["queued_runs"], 0) << back.dump() << daemon.log();
  EXPECT_EQ(server.query("outage", "SELECT COUNT(*), COUNT(DISTINCT pid) FROM runs"), "11|11");
  EXPECT_EQ(server.query("outage", "SELECT COUNT(*) FROM runs WHERE status = 'finished'"), "11");
  // Each run's peak is its parameter's MiB (and a little more).
  EXPECT_EQ(server.query("outage",
                         "SELECT COUNT(*) FROM runs WHERE host_peak_bytes < (params::json->>'mib')"
                         "::float8 * 1048576 OR host_peak_bytes > ((params::json->>'mib')::float8"
                         " + 2) * 1048576"),
            "0");
  // The growing runs' samples, before and during the outage, are all there, each once.
  EXPECT_EQ(server.query("outage",
                         "SELECT COUNT(*) FROM runs WHERE (params::json->>'mib')::float8 = 24 AND "
                         "samples > 0"),
            "4");
  EXPECT_EQ(server.query("outage",
                         "SELECT (SELECT COUNT(*) FROM samples) = (SELECT SUM(samples) FROM runs)"),
            "t");
  EXPECT_EQ(server.query("outage",
                         "SELECT COUNT(*) FROM (SELECT run_id, t_s FROM samples GROUP BY run_id, "
                         "t_s HAVING COUNT(*) > 1) AS twice"),
            "0");
}

// A daemon started while the server is down starts, queues, and says why.
TEST(PostgresDaemons, ADaemonStartedWhileTheServerIsDownQueuesAndSaysWhy) {
  test::TempDir dir;
  Daemon daemon(dir.path(),
                test::DaemonSetup{
                    "", "", "", "postgresql://memwatch@/none?host=/nonexistent&port=1", {}, ""});
  const auto r = test::run({kPatterns, "alloc_mib", "2"}, shim_env(daemon, 2));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json status = daemon.ask_until(
      {{"op", "status"}}, [](const json& s) { return s["store"]["queued_runs"] == 1; });
  EXPECT_EQ(status["store"]["reachable"], false) << status.dump();
  EXPECT_EQ(status["store"]["queued_runs"], 1) << status.dump();
  EXPECT_NE(daemon.log().find("cannot connect to the PostgreSQL store postgresql://memwatch@/none"),
            std::string::npos)
      << daemon.log();
}

TEST(PostgresDaemons, AMalformedStoreUrlIsRefusedAtStart) {
  test::TempDir dir;
  // --db: the older spelling of --store, still accepted.
  const auto started =
      test::run({MEMWATCHD_PATH, "--foreground", "--db", "postgresql://[::1/memwatch", "--queue",
                 dir.file("q.db"), "--ingest", "ipc://" + dir.file("i"), "--query",
                 "ipc://" + dir.file("q"), "--events", "ipc://" + dir.file("e")});
  EXPECT_NE(started.exit_code, 0);
  EXPECT_NE(started.err.find("is not a PostgreSQL URL"), std::string::npos) << started.err;
}

}  // namespace
}  // namespace memwatch
