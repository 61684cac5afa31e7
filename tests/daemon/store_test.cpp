// The SQLite store's own concerns, on real files: upgrades of older stores, a locked file, a
// reader that never writes. What every backend must do is store_backends_test.cpp's.
#include "store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "process.hpp"
#include "store_messages.hpp"

using namespace memwatch::daemon;
using namespace memwatch;
using memwatch::test::hello;

namespace {

TEST(Store, KilledRunsKeepTheHigherOfTheirKnownPeaks) {
  test::TempDir dir;
  Store store(dir.file("m.db"));
  const auto id = store.begin_run(hello("unet", 4), 100);
  store.add_sample(id, {1234, 1.0, 30, 40, 0, 0});
  protocol::Bye last;  // what the killed run's segment held
  last.host_peak_bytes = 35;
  last.heap_peak_bytes = 30;
  last.mmap_peak_bytes = 5;
  last.elapsed_s = 3.0;
  store.mark_killed(id, last);
  const auto run = store.run(id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, RunStatus::killed);
  EXPECT_EQ(run->host_peak_bytes, 40);  // the sample saw more than the killed segment kept
  EXPECT_TRUE(store.running_on("node").empty());
}

// A value no other figure has: a figure read back from another's column shows.
std::int64_t distinct(const protocol::Figure& f) {
  return 1000 + 17 * static_cast<std::int64_t>(protocol::figure_index(f));
}

protocol::Bye bye_with_every_figure() {
  protocol::Bye bye;
  protocol::for_each_run_figure(
      bye, [](const protocol::Figure& f, std::int64_t& v) { v = distinct(f); });
  bye.device_peaks = {7, 0, 9};
  bye.elapsed_s = 2;
  return bye;
}

void expect_every_figure(const Run& run) {
  std::size_t seen = 0;
  protocol::for_each_run_figure(run, [&](const protocol::Figure& f, std::int64_t v) {
    EXPECT_EQ(v, distinct(f)) << f.name;
    ++seen;
  });
  std::size_t listed = 0;
  for (const protocol::Figure& f : protocol::kFigures) listed += f.run;
  EXPECT_EQ(seen, listed);
  EXPECT_EQ(run.device_peaks, (std::vector<std::int64_t>{7, 0, 9}));
}

TEST(Store, EveryRunFigureAndEachDevicePeakIsStoredAndReadBack) {
  test::TempDir dir;
  const std::string db = dir.file("m.db");
  std::int64_t id = 0;
  {
    Store store(db);
    id = store.begin_run(hello("unet", 2), 100);
    store.finish_run(id, bye_with_every_figure());
    expect_every_figure(*store.run(id));
  }
  Store again(db, StoreAccess::read_only);
  expect_every_figure(again.runs("unet").at(0));
}

TEST(Store, AKilledRunKeepsEveryFigureItsSegmentHeld) {
  test::TempDir dir;
  Store store(dir.file("m.db"));
  const auto id = store.begin_run(hello("unet", 2), 100);
  store.mark_killed(id, bye_with_every_figure());
  const auto run = store.run(id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, RunStatus::killed);
  expect_every_figure(*run);
}

TEST(Store, ModelsKeepTheirHistoryAndTheLatestWins) {
  test::TempDir dir;
  Store store(dir.file("m.db"));
  EXPECT_FALSE(store.latest_model("unet", "host_peak_bytes").has_value());
  store.save_model("unet", "host_peak_bytes", R"({"v":1})", 5, 1);
  store.save_model("unet", "host_peak_bytes", R"({"v":2})", 6, 2);
  EXPECT_EQ(store.latest_model("unet", "host_peak_bytes"), R"({"v":2})");
}

TEST(Store, AFileThatIsNotADatabaseIsRefusedAndLeftAlone) {
  test::TempDir dir;
  const std::string path = dir.file("notes.txt");
  std::ofstream(path) << "these are my notes, not a database\n";
  EXPECT_THROW(Store{path}, StoreError);
  EXPECT_EQ(test::read_file(path), "these are my notes, not a database\n");
}

TEST(Store, AFileLockedByAnotherProgramIsNamedAsLockedNotAsForeign) {
  test::TempDir dir;
  const std::string db = dir.file("m.db");
  { Store made(db); }
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE;", nullptr,
                         nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(holder);
  try {
    Store second(db);
    ADD_FAILURE() << "opened a store another connection holds exclusively";
  } catch (const StoreError& e) {
    EXPECT_TRUE(e.locked());
    EXPECT_NE(std::string(e.what()).find(db + " is locked by another program"), std::string::npos)
        << e.what();
  }
  sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  Store after(db);  // the file is as it was
  EXPECT_EQ(after.counts().runs, 0);
}

// A store written before runs counted their samples, as that version made it.
void write_store_without_sample_counts(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* sql = R"sql(
    PRAGMA journal_mode=WAL;
    CREATE TABLE runs (id INTEGER PRIMARY KEY, workload TEXT NOT NULL, params TEXT NOT NULL,
      host TEXT NOT NULL, pid INTEGER NOT NULL, status TEXT NOT NULL, started REAL NOT NULL,
      elapsed_s REAL NOT NULL DEFAULT 0, host_peak_bytes INTEGER NOT NULL DEFAULT 0,
      heap_peak_bytes INTEGER NOT NULL DEFAULT 0, mmap_peak_bytes INTEGER NOT NULL DEFAULT 0,
      device_peak_bytes INTEGER NOT NULL DEFAULT 0, pinned_peak_bytes INTEGER NOT NULL DEFAULT 0,
      managed_peak_bytes INTEGER NOT NULL DEFAULT 0, rss_hwm_bytes INTEGER NOT NULL DEFAULT 0,
      host_capacity_bytes INTEGER NOT NULL DEFAULT 0, exit_cause TEXT NOT NULL DEFAULT '',
      exit_detail INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE samples (run_id INTEGER NOT NULL REFERENCES runs(id), t_s REAL NOT NULL,
      host_live_bytes INTEGER NOT NULL, host_peak_bytes INTEGER NOT NULL,
      device_live_bytes INTEGER NOT NULL, device_peak_bytes INTEGER NOT NULL);
    CREATE INDEX samples_by_run ON samples(run_id);
    INSERT INTO runs (id, workload, params, host, pid, status, started, host_peak_bytes)
      VALUES (1, 'unet', '{"batch":2}', 'node', 1, 'finished', 100, 70),
             (2, 'unet', '{"batch":4}', 'node', 2, 'running', 200, 90);
    INSERT INTO samples VALUES (1, 0.1, 10, 10, 0, 0), (1, 0.2, 70, 70, 0, 0),
                               (2, 0.1, 90, 90, 0, 0), (1, 0.3, 5, 70, 0, 0);
  )sql";
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(Store, AnOlderStoreIsUpgradedInPlaceAndKeepsEveryRun) {
  test::TempDir dir;
  const std::string db = dir.file("old.db");
  write_store_without_sample_counts(db);
  {
    Store store(db);
    const auto runs = store.runs("unet");
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].samples, 3);
    EXPECT_EQ(runs[0].host_peak_bytes, 70);
    EXPECT_EQ(runs[1].samples, 1);
    EXPECT_EQ(store.counts().samples, 4);
    store.add_sample(2, {.pid = 2, .t_s = 0.5, .host_live_bytes = 95, .host_peak_bytes = 95});
    store.flush_samples();
    EXPECT_EQ(store.run(2)->samples, 2);
    EXPECT_EQ(store.run(2)->host_peak_bytes, 95);
  }
  Store again(db);  // a second opening finds the upgrade done and counts nothing twice
  EXPECT_EQ(again.counts().samples, 5);
  EXPECT_EQ(again.run(1)->samples, 3);
}

// A store from before a figure had its column (or before the device peaks were kept): every run
// figure but the host peak is taken out of the older store (those it had), and each comes back
// as a column.
TEST(Store, AStoreFromBeforeAFigureGetsItsColumnAndKeepsItsRuns) {
  test::TempDir dir;
  const std::string db = dir.file("old.db");
  write_store_without_sample_counts(db);
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    for (const protocol::Figure& f : protocol::kFigures) {
      if (!f.run || f.name == "host_peak_bytes") continue;
      const std::string has =
          "SELECT 1 FROM pragma_table_info('runs') WHERE name = '" + std::string(f.name) + "'";
      bool present = false;
      sqlite3_exec(
          raw, has.c_str(),
          [](void* found, int, char**, char**) { return *static_cast<bool*>(found) = true, 0; },
          &present, nullptr);
      if (!present) continue;
      const std::string sql = "ALTER TABLE runs DROP COLUMN " + std::string(f.name);
      ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
          << sqlite3_errmsg(raw);
    }
    sqlite3_close(raw);
  }
  Store store(db);
  const auto old = store.run(1);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->host_peak_bytes, 70);
  EXPECT_EQ(old->heap_peak_bytes, 0);
  EXPECT_TRUE(old->device_peaks.empty());
  store.finish_run(2, bye_with_every_figure());
  expect_every_figure(*store.run(2));
}

TEST(Store, ALocationIsShownWithoutItsPasswordAndOtherwiseAsGiven) {
  EXPECT_EQ(without_password("postgresql://memwatch:s3:cr%40t@db.example/memwatch"),
            "postgresql://memwatch:***@db.example/memwatch");
  EXPECT_EQ(without_password("postgres://u:pw@/m?host=/run/pg&password=pw&port=5"),
            "postgres://u:***@/m?host=/run/pg&password=***&port=5");
  EXPECT_EQ(without_password("postgresql:///m?password=last"), "postgresql:///m?password=***");
  // No password: every character comes back, a colon in a host's port and a key that only ends
  // in "password=" included.
  for (const std::string kept :
       {"postgresql://memwatch@db:5432/memwatch", "postgresql://db:5432/m?oldpassword=x",
        "/var/lib/memwatch/runs.db", "runs:db@here.sqlite", ""})
    EXPECT_EQ(without_password(kept), kept);
}

}  // namespace
