// The report: valid JSON of schema memwatch.report/1 with the counters' values, written
// atomically to a path with %p expanded.
#include "reporting/report.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "process.hpp"
#include "reporting/json_buffer.hpp"

using namespace memwatch::shim;
using nlohmann::json;

namespace {

std::string number_text(double v) {
  char buf[64];
  JsonBuffer j(buf, sizeof buf);
  j.number(v);
  return std::string(j.view());
}

TEST(JsonBuffer, NumbersRoundTripThroughAJsonParser) {
  for (double v : {0.0, 1.0, -3.0, 2.5, 1e-4, 123456.789, 0.1, 1e20, -7.25e-9, 4096.0,
                   9007199254740993.0, 0.000123456789, 1e-300, 4.9e-320, -2.2e-310, 1.7e308}) {
    const json parsed = json::parse(number_text(v));
    // Subnormals keep fewer digits of their own.
    EXPECT_NEAR(parsed.get<double>(), v, std::abs(v) * (std::abs(v) < 1e-307 ? 1e-3 : 1e-8))
        << number_text(v);
  }
  EXPECT_EQ(number_text(128), "128");
  EXPECT_EQ(number_text(0.25), "0.25");
}

TEST(JsonBuffer, StringsAreEscaped) {
  char buf[64];
  JsonBuffer j(buf, sizeof buf);
  j.string("a\"b\\c\n\x01");
  EXPECT_EQ(json::parse(j.view()).get<std::string>(), "a\"b\\c\n\x01");
}

TEST(JsonBuffer, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  char buf[64];
  JsonBuffer j(buf, sizeof buf);
  j.string("caf\xc3\xa9 \xff\xc3 \xed\xa0\x80 \xf0\x9f\x98\x80");
  EXPECT_EQ(json::parse(j.view()).get<std::string>(),
            "caf\xc3\xa9 \uFFFD\uFFFD \uFFFD\uFFFD\uFFFD \xf0\x9f\x98\x80");
}

TEST(JsonBuffer, OverflowIsReported) {
  char buf[8];
  JsonBuffer j(buf, sizeof buf);
  j.string("far too long for eight bytes");
  EXPECT_TRUE(j.overflowed());
}

ReportFacts sample_facts(Config& c) {
  c = Config{};
  std::snprintf(c.workload, sizeof c.workload, "unet3d-train");
  std::snprintf(c.params[0].name, sizeof c.params[0].name, "batch");
  c.params[0].value = 2;
  std::snprintf(c.params[1].name, sizeof c.params[1].name, "lr");
  c.params[1].value = 0.001;
  c.param_count = 2;
  ReportFacts f{};
  f.config = &c;
  f.counters.heap_peak = 1000;
  f.counters.mmap_peak = 700;
  f.counters.host_peak = 1500;
  f.counters.host_live = 10;
  f.counters.device_peak[1] = 4096;
  f.counters.device_sum_peak = 4096;
  f.rss_hwm_bytes = 123;
  f.elapsed_s = 1.5;
  f.pid = 42;
  f.cause = ExitCause::signal;
  f.detail = 9;
  return f;
}

TEST(Report, HasTheSchemaFieldsAndValues) {
  Config c;
  const ReportFacts f = sample_facts(c);
  char buf[8192];
  const json r = json::parse(report_format(f, buf, sizeof buf));
  EXPECT_EQ(r["schema"], "memwatch.report/1");
  EXPECT_EQ(r["pid"], 42);
  EXPECT_EQ(r["workload"], "unet3d-train");
  EXPECT_EQ(r["params"]["batch"], 2);
  EXPECT_DOUBLE_EQ(r["params"]["lr"].get<double>(), 0.001);
  EXPECT_EQ(r["host"]["peak_bytes"], 1500);
  EXPECT_EQ(r["host"]["heap_peak_bytes"], 1000);
  EXPECT_EQ(r["host"]["mmap_peak_bytes"], 700);
  EXPECT_EQ(r["host"]["live_bytes"], 10);
  EXPECT_EQ(r["device_peak_bytes"], 4096);
  ASSERT_EQ(r["devices"].size(), 1u);
  EXPECT_EQ(r["devices"][0]["index"], 1);
  EXPECT_EQ(r["devices"][0]["peak_bytes"], 4096);
  EXPECT_EQ(r["rss_hwm_bytes"], 123);
  EXPECT_DOUBLE_EQ(r["elapsed_s"].get<double>(), 1.5);
  EXPECT_EQ(r["exit"]["cause"], "signal");
  EXPECT_EQ(r["exit"]["signal"], 9);
}

TEST(Report, TooSmallABufferGivesNothingRatherThanHalfAReport) {
  Config c;
  const ReportFacts f = sample_facts(c);
  char buf[64];
  EXPECT_TRUE(report_format(f, buf, sizeof buf).empty());
}

TEST(Report, WrittenAtomicallyWithThePidExpanded) {
  const memwatch::test::TempDir temp;
  const std::string dir = temp.path();
  const std::string templ = dir + "/run.%p.json";
  ASSERT_EQ(report_write(templ.c_str(), 1234, "{\"ok\":1}\n"), nullptr);
  std::ifstream in(dir + "/run.1234.json");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "{\"ok\":1}\n");
  EXPECT_NE(report_write("/nonexistent-dir/x.json", 1, "{}"), nullptr);
}

}  // namespace
