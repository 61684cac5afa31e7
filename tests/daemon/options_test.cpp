// memwatchd's option table: --store and its older spelling --db set one thing, and the local
// queue's options refuse a bad value by name.
#include "options.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using namespace memwatch::daemon;

namespace {

std::optional<Options> parse(std::vector<std::string> words, std::string& error) {
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  return parse_options(argv, error);
}

TEST(DaemonOptions, StoreAndItsOlderSpellingDbNameTheSameStore) {
  std::string error;
  const auto by_store = parse({"--store", "postgresql://m@db/memwatch"}, error);
  ASSERT_TRUE(by_store) << error;
  EXPECT_EQ(by_store->store, "postgresql://m@db/memwatch");
  const auto by_db = parse({"--db", "/srv/memwatch.db"}, error);
  ASSERT_TRUE(by_db) << error;
  EXPECT_EQ(by_db->store, "/srv/memwatch.db");
  EXPECT_NE(options_help().find("--store PATH|URL (or --db, its older spelling)"),
            std::string::npos);
}

TEST(DaemonOptions, TheQueueAndItsLimit) {
  std::string error;
  const auto set = parse({"--queue", "/srv/q.db", "--queue-limit", "2500"}, error);
  ASSERT_TRUE(set) << error;
  EXPECT_EQ(set->queue, "/srv/q.db");
  EXPECT_EQ(set->queue_limit, 2500);
  for (const char* bad : {"-1", "12x", "", "lots"}) {
    EXPECT_FALSE(parse({"--queue-limit", bad}, error)) << bad;
    EXPECT_EQ(
        error,
        std::string("--queue-limit: expected a number of samples like 1000000, got '") + bad + "'");
  }
}

TEST(DaemonOptions, StatedAxes) {
  std::string error;
  const auto set = parse({"--axes", "dim=3,pd=1"}, error);
  ASSERT_TRUE(set) << error;
  EXPECT_EQ(set->axes, (std::map<std::string, int>{{"dim", 3}, {"pd", 1}}));
  EXPECT_FALSE(parse({"--axes", "dim=cube"}, error));
  EXPECT_NE(error.find("--axes: 'dim=cube': expected PARAMETER=AXES"), std::string::npos) << error;
}

}  // namespace
