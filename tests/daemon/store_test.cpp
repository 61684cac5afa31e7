// The store on a real SQLite file: runs, samples, kills and models survive reopening.
#include "store.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "process.hpp"

using namespace memwatch::daemon;
using namespace memwatch;

namespace {

protocol::Hello hello(const char* workload, double batch) {
  protocol::Hello h;
  h.pid = 1234;
  h.host = "node";
  h.workload = workload;
  h.start_unix_s = 100;
  h.params = {{"batch", batch}, {"dim", 64}};
  return h;
}

TEST(Store, ARunFromHelloToByeAndBackAfterReopening) {
  test::TempDir dir;
  const std::string db = dir.file("m.db");
  std::int64_t id = 0;
  {
    Store store(db);
    id = store.begin_run(hello("unet", 2), 100);
    store.add_sample(id, {1234, 0.5, 10, 20, 0, 0});
    store.add_sample(id, {1234, 1.0, 30, 40, 0, 5});
    EXPECT_EQ(store.queued_samples(), 2u);
    store.flush_samples();
    EXPECT_EQ(store.queued_samples(), 0u);
    EXPECT_EQ(store.run(id)->samples, 2);
    protocol::Bye bye;
    bye.host_peak_bytes = 50;
    bye.heap_peak_bytes = 45;
    bye.elapsed_s = 2;
    store.finish_run(id, bye);
  }
  Store again(db);
  const auto runs = again.runs("unet");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, id);
  EXPECT_EQ(runs[0].status, RunStatus::finished);
  EXPECT_EQ(runs[0].host_peak_bytes, 50);
  EXPECT_EQ(runs[0].samples, 2);
  EXPECT_EQ(runs[0].params, (protocol::Params{{"batch", 2}, {"dim", 64}}));
  EXPECT_EQ(again.counts().runs, 1);
  EXPECT_EQ(again.workloads(), std::vector<std::string>{"unet"});
}

TEST(Store, KilledRunsKeepTheHigherOfTheirKnownPeaks) {
  test::TempDir dir;
  Store store(dir.file("m.db"));
  const auto id = store.begin_run(hello("unet", 4), 100);
  store.add_sample(id, {1234, 1.0, 30, 40, 0, 0});
  store.mark_killed(id, 35, 30, 5, 0, 3.0);
  const auto run = store.run(id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, RunStatus::killed);
  EXPECT_EQ(run->host_peak_bytes, 40);  // the sample saw more than the killed segment kept
  EXPECT_TRUE(store.running_on("node").empty());
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

}  // namespace
