// The store's behaviour on each backend: a SQLite file and a real PostgreSQL server. The same
// runs, samples, kills and models must come back from either, and two daemons' connections to
// one PostgreSQL database must see each other's runs.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <memory>
#include <string>

#include "postgres_server.hpp"
#include "process.hpp"
#include "store.hpp"
#include "store_messages.hpp"

using namespace memwatch::daemon;
using namespace memwatch;
using memwatch::test::hello;

namespace {

// One server for the whole suite (initdb takes a second or two); a database per test.
test::PostgresServer& postgres() {
  static test::PostgresServer server;
  return server;
}

class StoreOnEveryBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      location_ = dir_.file("m.db");
    } else {
      const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
      std::string name = std::string("t_") + test->name();
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      location_ = postgres().create_database(name.substr(0, 60));
    }
  }
  test::TempDir dir_;
  std::string location_;
};

TEST_P(StoreOnEveryBackend, ARunFromHelloToByeComesBackAfterReopening) {
  std::int64_t id = 0;
  {
    Store store(location_);
    protocol::Hello in_slurm = hello("unet", 2);
    in_slurm.scheduler_job = "81234.0";
    id = store.begin_run(in_slurm, 100);
    store.add_sample(id, {1234, 0.5, 10, 20, 0, 0});
    store.add_sample(id, {.pid = 1234,
                          .t_s = 1.0,
                          .host_live_bytes = 30,
                          .host_peak_bytes = 40,
                          .device_live_bytes = 5,
                          .device_peak_bytes = 5});
    EXPECT_EQ(store.queued_samples(), 2u);
    store.flush_samples();
    EXPECT_EQ(store.queued_samples(), 0u);
    EXPECT_EQ(store.run(id)->samples, 2);
    EXPECT_EQ(store.run(id)->host_peak_bytes, 40);  // the batch raised the run's peaks
    EXPECT_DOUBLE_EQ(store.run(id)->elapsed_s, 1.0);
    protocol::Bye bye;
    bye.host_peak_bytes = 50;
    bye.heap_peak_bytes = 45;
    bye.processes = 3;
    bye.device_peaks = {7, 0, 9};
    bye.elapsed_s = 2;
    store.finish_run(id, bye);
  }
  Store again(location_, StoreAccess::read_only);
  const auto runs = again.runs("unet");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, id);
  EXPECT_EQ(runs[0].status, RunStatus::finished);
  EXPECT_EQ(runs[0].host_peak_bytes, 50);
  EXPECT_EQ(runs[0].heap_peak_bytes, 45);
  EXPECT_EQ(runs[0].processes, 3);
  EXPECT_EQ(runs[0].device_peaks, (std::vector<std::int64_t>{7, 0, 9}));
  EXPECT_EQ(runs[0].samples, 2);
  EXPECT_EQ(runs[0].params, (protocol::Params{{"batch", 2}, {"dim", 64}}));
  EXPECT_EQ(runs[0].scheduler_job, "81234.0");
  EXPECT_DOUBLE_EQ(runs[0].started_unix_s, 100);
  EXPECT_EQ(runs[0].exit_cause, "exit");
  EXPECT_EQ(again.counts().runs, 1);
  EXPECT_EQ(again.counts().samples, 2);
  EXPECT_EQ(again.workloads(), std::vector<std::string>{"unet"});
}

TEST_P(StoreOnEveryBackend, AKilledRunKeepsTheHigherOfItsFiguresAndTheSegments) {
  Store store(location_);
  const std::int64_t id = store.begin_run(hello("unet", 4), 100);
  store.add_sample(id, {1234, 3.0, 80, 90, 0, 0});
  protocol::Bye last;
  last.host_peak_bytes = 70;  // lower than the samples saw: the samples' stays
  last.heap_peak_bytes = 60;
  last.elapsed_s = 2;
  store.mark_killed(id, last);
  const auto run = store.run(id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, RunStatus::killed);
  EXPECT_EQ(run->host_peak_bytes, 90);
  EXPECT_EQ(run->heap_peak_bytes, 60);
  EXPECT_DOUBLE_EQ(run->elapsed_s, 3.0);
  EXPECT_TRUE(store.running_on("node").empty());
}

TEST_P(StoreOnEveryBackend, TheLatestModelOfEachTargetIsTheOneAnswered) {
  Store store(location_);
  EXPECT_FALSE(store.latest_model("unet", "host_peak_bytes").has_value());
  store.save_model("unet", "host_peak_bytes", R"({"v":1})", 4, 10);
  store.save_model("unet", "host_peak_bytes", R"({"v":2})", 5, 11);
  store.save_model("unet", "device_peak_bytes", R"({"v":3})", 5, 12);
  EXPECT_EQ(store.latest_model("unet", "host_peak_bytes"), R"({"v":2})");
  EXPECT_EQ(store.latest_model("unet", "device_peak_bytes"), R"({"v":3})");
}

TEST_P(StoreOnEveryBackend, TwoConnectionsSeeEachOthersRuns) {
  Store first(location_);
  Store second(location_);  // a second daemon on the same store
  const std::int64_t a = first.begin_run(hello("unet", 1), 100);
  const std::int64_t b = second.begin_run(hello("unet", 2), 101);
  EXPECT_NE(a, b);
  protocol::Bye bye;
  bye.host_peak_bytes = 11;
  second.finish_run(a, bye);
  EXPECT_EQ(first.runs("unet").size(), 2u);
  EXPECT_EQ(first.run(a)->host_peak_bytes, 11);
  EXPECT_EQ(second.counts().running, 1);
}

// Two daemons on one host both watch its runs: one may find a shim's process gone after the
// other stored its BYE. The finished run stays finished.
TEST_P(StoreOnEveryBackend, AFinishedRunIsNeverMarkedKilledAfterwards) {
  Store store(location_);
  const std::int64_t id = store.begin_run(hello("unet", 1), 100);
  protocol::Bye bye;
  bye.host_peak_bytes = 10;
  store.finish_run(id, bye);
  protocol::Bye last;
  last.host_peak_bytes = 99;
  store.mark_killed(id, last);
  EXPECT_EQ(store.run(id)->status, RunStatus::finished);
  EXPECT_EQ(store.run(id)->host_peak_bytes, 10);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreOnEveryBackend, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& backend) { return backend.param; });

// A daemon connecting to a complete store (its refit worker, one reconnecting after a restart)
// takes no table lock: its schema check once queued an ALTER TABLE behind another daemon's open
// write, and that write's next statement behind the ALTER, a deadlock the server broke by
// failing the write (and the daemon with it). A statement timeout makes a lock wait an error.
TEST(PostgresStore, ConnectingToACompleteStoreWaitsForNoWriter) {
  const std::string url = postgres().create_database("no_lock_wait");
  Store first(url);
  const std::int64_t run = first.begin_run(hello("unet", 1), 100);
  PGconn* writer = PQconnectdb(url.c_str());
  ASSERT_EQ(PQstatus(writer), CONNECTION_OK) << PQerrorMessage(writer);
  PQclear(PQexec(writer, "BEGIN"));
  PGresult* held = PQexec(
      writer, ("UPDATE runs SET samples = samples WHERE id = " + std::to_string(run)).c_str());
  EXPECT_EQ(PQresultStatus(held), PGRES_COMMAND_OK) << PQerrorMessage(writer);
  PQclear(held);
  EXPECT_NO_THROW(open_backend(url + "&options=-c%20lock_timeout%3D2000", StoreAccess::read_write));
  PQclear(PQexec(writer, "ROLLBACK"));
  PQfinish(writer);
}

// A server that does not answer is no error at start (a daemon queues meanwhile): a read says
// which server, as `status` does; a backend given a password (the store refuses one on its
// command line, but a service file may hold one) never repeats it.
TEST(PostgresStore, AServerThatDoesNotAnswerIsNamedWithoutItsPassword) {
  Store store("postgresql://memwatch@/memwatch?host=/nonexistent&port=1");
  EXPECT_FALSE(store.health().reachable);
  try {
    (void)store.counts();
    FAIL() << "read from nothing";
  } catch (const StoreError& e) {
    EXPECT_TRUE(e.unreachable());
    EXPECT_NE(
        std::string(e.what()).find("cannot connect to the PostgreSQL store postgresql://memwatch@"),
        std::string::npos)
        << e.what();
  }
  try {
    (void)open_backend("postgresql://memwatch:secret@/memwatch?host=/nonexistent&port=1",
                       StoreAccess::read_write);
    FAIL() << "connected to nothing";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("postgresql://memwatch:***@"), std::string::npos) << what;
    EXPECT_EQ(what.find("secret"), std::string::npos) << what;
  }
}

}  // namespace
