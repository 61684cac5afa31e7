// Two memwatchd on one PostgreSQL database (a real server), with real shims: runs reported to
// either are stored once and answered by both, and a model fitted by one answers on the other.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

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

TEST(PostgresDaemons, AnUnreachableStoreIsNamedAtStart) {
  test::TempDir dir;
  const auto started = test::run({MEMWATCHD_PATH, "--foreground", "--db",
                                  "postgresql://memwatch@/none?host=/nonexistent&port=1",
                                  "--ingest", "ipc://" + dir.file("i"), "--query",
                                  "ipc://" + dir.file("q"), "--events", "ipc://" + dir.file("e")});
  EXPECT_NE(started.exit_code, 0);
  EXPECT_NE(started.err.find("cannot connect to the PostgreSQL store postgresql://memwatch@/none"),
            std::string::npos)
      << started.err;
}

}  // namespace
}  // namespace memwatch
