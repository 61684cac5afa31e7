// The query table: every op, and every malformed request answered with ok:false.
#include "query.hpp"

#include <gtest/gtest.h>

#include "process.hpp"

using namespace memwatch::daemon;
using nlohmann::json;

namespace {

class QueryTest : public ::testing::Test {
 protected:
  memwatch::test::TempDir dir_;
  Store store_{dir_.file("m.db")};
  ModelCache models_{store_};
  QueryTable table_{{&store_, &models_, [] { return json{{"runs", 0}}; }}};
  json ask(const std::string& request) { return json::parse(table_.answer(request)); }
};

TEST_F(QueryTest, StatusWorkloadsRuns) {
  memwatch::protocol::Hello h;
  h.workload = "unet";
  h.params = {{"batch", 8}};
  store_.begin_run(h, 1);
  EXPECT_EQ(ask(R"({"op":"status"})")["ok"], true);
  EXPECT_EQ(ask(R"({"op":"workloads"})")["workloads"][0]["workload"], "unet");
  const json runs = ask(R"({"op":"runs","workload":"unet"})");
  ASSERT_EQ(runs["runs"].size(), 1u);
  EXPECT_EQ(runs["runs"][0]["params"]["batch"], 8);
  EXPECT_EQ(runs["runs"][0]["status"], "running");
}

TEST_F(QueryTest, MalformedRequestsGetAnErrorNeverACrash) {
  for (const char* bad :
       {"", "{", "null", "[]", "42", R"({"op":7})", R"({"nop":"status"})", R"({"op":"fly"})",
        R"({"op":"runs"})", R"({"op":"runs","workload":""})", R"({"op":"runs","workload":3})",
        R"({"op":"model","workload":"unet"})", "\xff\xfe"}) {
    const json reply = ask(bad);
    EXPECT_EQ(reply["ok"], false) << bad;
    EXPECT_TRUE(reply["error"].is_string()) << bad;
  }
  EXPECT_EQ(ask(std::string(70000, ' '))["ok"], false);
}

TEST_F(QueryTest, AModelThatDoesNotExistIsSaidSo) {
  const json reply = ask(R"({"op":"model","workload":"unet","target":"host_peak_bytes"})");
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply["error"].get<std::string>().find("unet"), std::string::npos);
}

}  // namespace
