// `memwatch store copy` on real stores: a SQLite file into a real PostgreSQL database and back
// gives the same runs (every column), samples and models, and a store that holds runs is never
// copied into.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "postgres_server.hpp"
#include "process.hpp"
#include "store.hpp"
#include "store_messages.hpp"
#include "store_schema.hpp"

using namespace memwatch::daemon;
using namespace memwatch;
using memwatch::test::hello;

namespace {

const std::string kCli = MEMWATCH_CLI_PATH;

// A store with what a daemon leaves: finished, killed and running runs, samples and models.
void fill(const std::string& location) {
  Store store(location);
  for (int i = 1; i <= 5; ++i) {
    protocol::Hello h = hello(i % 2 ? "unet" : "resnet", i);
    if (i == 2) h.scheduler_job = "81234.0";
    const std::int64_t run = store.begin_run(h, 100 + i);
    for (int t = 1; t <= 3 * i; ++t)
      store.add_sample(run, {.pid = 1234,
                             .t_s = t * 0.25,
                             .host_live_bytes = t * 1000 + i,
                             .host_peak_bytes = t * 1000 + i,
                             .device_live_bytes = t,
                             .device_peak_bytes = t});
    protocol::Bye bye;
    bye.host_peak_bytes = 5000 * i;
    bye.device_peaks = {7, i};
    bye.elapsed_s = 1.5 * i;
    bye.cause = i == 3 ? protocol::ExitCause::signal : protocol::ExitCause::exit;
    bye.detail = i == 3 ? 9 : 0;
    if (i == 4)
      store.mark_killed(run, bye);
    else if (i != 5)
      store.finish_run(run, bye);
  }
  store.save_model("unet", "host_peak_bytes", R"({"formula":"a"})", 3, 200.5);
  store.save_model("unet", "host_peak_bytes", R"({"formula":"b"})", 3, 201.5);
  store.save_model("resnet", "device_peak_bytes", R"({"formula":"c"})", 2, 202.5);
}

struct Contents {
  std::vector<std::vector<ColumnValue>> runs;
  std::vector<std::vector<double>> samples;
  std::vector<std::vector<std::string>> models;
};

Contents contents(const std::string& location) {
  const auto store = open_backend(location, StoreAccess::read_only);
  Contents c;
  for (const Run& r : store->runs_after(0, 1000)) c.runs.push_back(run_values(r));
  store->each_sample_batch(4, [&](const std::vector<StoredSample>& batch) {
    for (const StoredSample& s : batch)
      c.samples.push_back(
          {static_cast<double>(s.run), s.t_s, static_cast<double>(s.host_live_bytes),
           static_cast<double>(s.host_peak_bytes), static_cast<double>(s.device_live_bytes),
           static_cast<double>(s.device_peak_bytes)});
  });
  for (const StoredModel& m : store->models())
    c.models.push_back({std::to_string(m.id), m.workload, m.target,
                        std::to_string(m.created_unix_s), std::to_string(m.runs), m.model_json});
  return c;
}

TEST(StoreCopy, SqliteToPostgresAndBackGivesTheSameStore) {
  test::PostgresServer server;
  const std::string postgres = server.create_database("copied");
  test::TempDir dir;
  const std::string sqlite = dir.file("from.db");
  fill(sqlite);
  const Contents original = contents(sqlite);
  ASSERT_EQ(original.runs.size(), 5u);
  ASSERT_EQ(original.samples.size(), 45u);
  ASSERT_EQ(original.models.size(), 3u);

  const auto in = test::run({kCli, "store", "copy", sqlite, postgres});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_NE(in.out.find("copied 5 runs, 45 samples and 3 models"), std::string::npos) << in.out;
  EXPECT_NE(in.err.find("45 of 45 samples"), std::string::npos) << in.err;
  const Contents in_postgres = contents(postgres);
  EXPECT_EQ(in_postgres.runs, original.runs);
  EXPECT_EQ(in_postgres.samples, original.samples);
  EXPECT_EQ(in_postgres.models, original.models);

  const std::string back = dir.file("back.db");
  const auto out = test::run({kCli, "store", "copy", postgres, back});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const Contents round_trip = contents(back);
  EXPECT_EQ(round_trip.runs, original.runs);
  EXPECT_EQ(round_trip.samples, original.samples);
  EXPECT_EQ(round_trip.models, original.models);

  // A run stored after the copy takes an id of its own, past those copied.
  Store after(postgres);
  EXPECT_EQ(after.begin_run(hello("unet", 9), 300), 6);
}

TEST(StoreCopy, AStoreThatHoldsRunsIsNeverCopiedInto) {
  test::PostgresServer server;
  const std::string postgres = server.create_database("held");
  test::TempDir dir;
  fill(dir.file("a.db"));
  fill(dir.file("b.db"));
  ASSERT_EQ(test::run({kCli, "store", "copy", dir.file("a.db"), postgres}).exit_code, 0);
  const Contents before = contents(postgres);
  for (const std::string& source : {dir.file("b.db"), dir.file("a.db")}) {
    const auto refused = test::run({kCli, "store", "copy", source, postgres});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("already holds 5 runs and 3 models"), std::string::npos)
        << refused.err;
  }
  EXPECT_EQ(contents(postgres).runs, before.runs);
  const auto into_sqlite = test::run({kCli, "store", "copy", postgres, dir.file("b.db")});
  EXPECT_EQ(into_sqlite.exit_code, 1);
  EXPECT_NE(into_sqlite.err.find(dir.file("b.db") + " already holds"), std::string::npos)
      << into_sqlite.err;
}

TEST(StoreCopy, BadArgumentsAreNamed) {
  test::TempDir dir;
  const auto missing = test::run({kCli, "store", "copy", dir.file("none.db"), dir.file("to.db")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find(dir.file("none.db")), std::string::npos) << missing.err;
  const auto one = test::run({kCli, "store", "copy", dir.file("none.db")});
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("expected: store copy SRC DST"), std::string::npos) << one.err;
}

}  // namespace
