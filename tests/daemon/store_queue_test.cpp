// A PostgreSQL store's local queue (store_spool.*), on a real server that is stopped and started
// again: what is written while the server is away reaches it, in order and once, when it is back.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "postgres_server.hpp"
#include "process.hpp"
#include "store.hpp"
#include "store_messages.hpp"
#include "store_spool.hpp"

using namespace memwatch::daemon;
using namespace memwatch;
using memwatch::test::hello;

namespace {

protocol::Sample sample(double t_s, std::int64_t host_peak) {
  return {.pid = 1234,
          .t_s = t_s,
          .host_live_bytes = host_peak,
          .host_peak_bytes = host_peak,
          .device_live_bytes = 0,
          .device_peak_bytes = 0};
}

protocol::Bye bye(std::int64_t host_peak) {
  protocol::Bye b;
  b.host_peak_bytes = host_peak;
  b.elapsed_s = 3;
  return b;
}

// Drains until the queue is empty; false if it never empties (the server never came back).
bool drained(Store& store) {
  for (int i = 0; i < 600; ++i) {
    store.drain_queue();
    const StoreHealth h = store.health();
    if (h.reachable && h.queued_runs == 0 && h.queued_samples == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(StoreQueue, RunsWrittenWhileTheServerIsDownReachItOnceWhenItIsBack) {
  test::PostgresServer server;
  const std::string url = server.create_database("queued");
  test::TempDir dir;
  Store store(url, StoreAccess::read_write, {dir.file("queue.db"), 1000});
  const std::int64_t before = store.begin_run(hello("unet", 1), 100);
  ASSERT_GT(before, 0);
  store.add_sample(before, sample(0.5, 10));
  store.flush_samples();

  server.stop("fast");
  store.add_sample(before, sample(1.0, 20));  // the run begun before the outage goes on
  const std::int64_t during = store.begin_run(hello("unet", 2), 101);
  EXPECT_LT(during, 0) << "a run begun while queueing has a local id";
  store.add_sample(during, sample(0.5, 30));
  store.add_sample(during, sample(1.0, 40));
  store.finish_run(before, bye(25));
  store.finish_run(during, bye(45));
  StoreHealth h = store.health();
  EXPECT_FALSE(h.reachable);
  EXPECT_GT(h.unreachable_since_unix_s, 0);
  EXPECT_EQ(h.queued_runs, 2);
  EXPECT_EQ(h.queued_samples, 3);
  EXPECT_THROW((void)store.runs("unet"), StoreError);

  server.start();
  ASSERT_TRUE(drained(store));
  EXPECT_GT(store.stored_id(during), 0) << "the local id now names the stored run";
  const auto runs = store.runs("unet");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, before);
  EXPECT_EQ(runs[0].status, RunStatus::finished);
  EXPECT_EQ(runs[0].samples, 2);
  EXPECT_EQ(runs[0].host_peak_bytes, 25);
  EXPECT_EQ(runs[1].id, store.stored_id(during));
  EXPECT_EQ(runs[1].status, RunStatus::finished);
  EXPECT_EQ(runs[1].samples, 2);
  EXPECT_EQ(runs[1].host_peak_bytes, 45);
  EXPECT_EQ(runs[1].params, hello("unet", 2).params);
  EXPECT_EQ(server.query("queued", "SELECT COUNT(*) FROM samples"), "4");
}

TEST(StoreQueue, AQueueLeftByAStoppedDaemonIsDrainedByTheNextOnTheSameFile) {
  test::PostgresServer server;
  const std::string url = server.create_database("restarted");
  server.stop();
  test::TempDir dir;
  {
    // Started while the server is down: no error, everything queued.
    Store store(url, StoreAccess::read_write, {dir.file("queue.db"), 1000});
    EXPECT_FALSE(store.health().reachable);
    const std::int64_t run = store.begin_run(hello("unet", 4), 100);
    store.add_sample(run, sample(0.5, 70));
    store.finish_run(run, bye(80));
  }
  server.start();
  Store next(url, StoreAccess::read_write, {dir.file("queue.db"), 1000});
  EXPECT_EQ(next.health().queued_runs, 1);
  ASSERT_TRUE(drained(next));
  const auto runs = next.runs("unet");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].host_peak_bytes, 80);
  EXPECT_EQ(runs[0].samples, 1);
}

TEST(StoreQueue, AFullQueueDropsNewSamplesButKeepsEveryRun) {
  test::PostgresServer server;
  const std::string url = server.create_database("full");
  server.stop();
  test::TempDir dir;
  Store store(url, StoreAccess::read_write, {dir.file("queue.db"), 3});
  const std::int64_t run = store.begin_run(hello("unet", 8), 100);
  for (int i = 1; i <= 5; ++i) store.add_sample(run, sample(i, i * 10));
  store.finish_run(run, bye(99));
  const StoreHealth h = store.health();
  EXPECT_EQ(h.queued_samples, 3);
  EXPECT_EQ(h.dropped_samples, 2);
  server.start();
  ASSERT_TRUE(drained(store));
  const auto runs = store.runs("unet");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].samples, 3);
  EXPECT_EQ(runs[0].host_peak_bytes, 99) << "the run's peak comes from its BYE";
}

TEST(StoreQueue, TwoDaemonsOnOneQueueFileAreRefused) {
  test::TempDir dir;
  StoreSpool first(dir.file("queue.db"), 10);
  try {
    StoreSpool second(dir.file("queue.db"), 10);
    FAIL() << "a second holder of the queue was let in";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("held by another memwatchd"), std::string::npos)
        << e.what();
  }
}

TEST(StoreQueue, AMalformedUrlIsRefusedAtOnce) {
  test::TempDir dir;
  try {
    Store store("postgresql://[::1/memwatch", StoreAccess::read_write, {dir.file("q.db"), 10});
    FAIL() << "a malformed URL was taken for a server that is away";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a PostgreSQL URL"), std::string::npos) << e.what();
  }
}

TEST(StoreQueue, AUrlHoldingAPasswordIsRefusedWithoutShowingIt) {
  test::TempDir dir;
  for (const std::string url : {"postgresql://memwatch:s3cret@localhost/memwatch",
                                "postgresql://memwatch@localhost/memwatch?password=s3cret"}) {
    try {
      Store store(url, StoreAccess::read_write, {dir.file("q.db"), 10});
      FAIL() << "a URL with a password was taken";
    } catch (const StoreError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("holds a password"), std::string::npos) << what;
      EXPECT_NE(what.find(".pgpass"), std::string::npos) << what;
      EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
    }
  }
}

}  // namespace
