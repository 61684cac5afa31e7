// CSV and JSON Lines: what is read, what is skipped, and every error naming its line.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "memwatch/model/table_parse.hpp"

namespace memwatch::model {
namespace {

const char* sweep_csv =
    "batch,dim,host_peak_bytes,heap_peak_bytes,device_peak_bytes,rss_hwm_bytes,elapsed_s,exit_"
    "status\n"
    "1,32,1000,900,0,1100,0.5,0\n"
    "2,32,2000,1900,0,2100,0.6,0\n"
    "4,32,4000,3900,0,4100,0.7,137\n"
    "\n"
    "# a comment\n"
    "4,64,8000,7900,0,8100,0.9,0\n";

// The line a ParseError names, and that its problem mentions `words`.
std::size_t error_line(const std::function<void()>& parse, const std::string& words) {
  try {
    parse();
  } catch (const ParseError& e) {
    EXPECT_NE(e.problem.find(words), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()), "line " + std::to_string(e.line) + ": " + e.problem);
    return e.line;
  }
  ADD_FAILURE() << "no ParseError";
  return 0;
}

TEST(ParseCsv, SweepOutputUsesHostPeakAndDropsMeasurementColumns) {
  const Dataset d = parse_csv(sweep_csv);
  EXPECT_EQ(d.target, "host_peak_bytes");
  EXPECT_EQ(d.params, (std::vector<std::string>{"batch", "dim"}));
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[2].x, (std::vector<double>{4, 64}));
  EXPECT_EQ(d.rows[2].y, 8000);
  EXPECT_EQ(d.rows[2].line, 7u);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("line 4"), std::string::npos) << d.notes[0];
  EXPECT_NE(d.notes[0].find("137"), std::string::npos) << d.notes[0];
}

// A GPU trainer's sweep is about its device peak; a sweep where some runs used no device (or
// only a failed run, whose row is skipped, did) is about the host's.
TEST(ParseCsv, SweepWhoseRunsUsedADeviceUsesTheDevicePeak) {
  const char* gpu_csv =
      "batch,dim,host_peak_bytes,device_peak_bytes,exit_status\n"
      "1,32,1000,5000,0\n"
      "2,32,1100,9000,0\n"
      "4,32,1200,17000,0\n"
      "8,32,1300,0,139\n";
  const Dataset d = parse_csv(gpu_csv);
  EXPECT_EQ(d.target, "device_peak_bytes");
  EXPECT_EQ(d.params, (std::vector<std::string>{"batch", "dim"}));
  EXPECT_EQ(d.rows[1].y, 9000);

  const char* failed_gpu_run =
      "batch,dim,host_peak_bytes,device_peak_bytes,exit_status\n"
      "1,32,1000,0,0\n"
      "2,32,1100,0,0\n"
      "4,32,1200,0,0\n"
      "8,32,1300,7000,1\n";
  EXPECT_EQ(parse_csv(failed_gpu_run).target, "host_peak_bytes");
  const char* some_runs_on_the_host =
      "batch,dim,host_peak_bytes,device_peak_bytes\n"
      "1,32,1000,5000\n"
      "2,32,1100,0\n"
      "4,32,1200,17000\n";
  EXPECT_EQ(parse_csv(some_runs_on_the_host).target, "host_peak_bytes");
}
TEST(ParseCsv, TargetAndParamsCanBeNamed) {
  TableOptions o;
  o.target = "rss_hwm_bytes";
  o.params = {"dim"};
  const Dataset d = parse_csv(sweep_csv, o);
  EXPECT_EQ(d.params, (std::vector<std::string>{"dim"}));
  EXPECT_EQ(d.rows[0].y, 1100);
}

TEST(ParseCsv, WithoutSweepColumnsTheLastColumnIsTheTarget) {
  const Dataset d = parse_csv("a,b,peak\n1,2,10\n2,3,20\n3,5,30\n");
  EXPECT_EQ(d.target, "peak");
  EXPECT_EQ(d.params, (std::vector<std::string>{"a", "b"}));
}

TEST(ParseCsv, ColumnOfWordsIsCategorical) {
  const Dataset d = parse_csv("batch,precision,peak\n1,fp32,10\n2,bf16,20\n3,fp32,30\n");
  EXPECT_EQ(d.params, (std::vector<std::string>{"batch"}));
  EXPECT_EQ(d.categories, (std::vector<std::string>{"precision"}));
  EXPECT_EQ(d.rows[1].labels, (std::vector<std::string>{"bf16"}));
}

TEST(ParseCsv, NonNumberNamesLineAndColumn) {
  EXPECT_EQ(error_line([] { (void)parse_csv("batch,peak\n1,10\n2x,20\n3,30\n"); },
                       "'2x' in column 'batch'"),
            3u);
  EXPECT_EQ(
      error_line([] { (void)parse_csv("batch,peak\n1,10\n2,lots\n3,30\n"); }, "non-number 'lots'"),
      3u);
  EXPECT_EQ(error_line([] { (void)parse_csv("batch,peak\n1,10\n,20\n3,30\n"); }, "empty value"),
            3u);
}

TEST(ParseCsv, MissingColumnNamesTheHeaderLine) {
  TableOptions o;
  o.target = "device_peak";
  EXPECT_EQ(error_line([&] { (void)parse_csv(sweep_csv, o); }, "no column 'device_peak'"), 1u);
  o.target.clear();
  o.params = {"batch", "depth"};
  EXPECT_EQ(error_line([&] { (void)parse_csv(sweep_csv, o); }, "no column 'depth'"), 1u);
}

TEST(ParseCsv, RaggedRowNamesItsLine) {
  EXPECT_EQ(error_line([] { (void)parse_csv("batch,dim,peak\n1,2,10\n2,20\n3,4,30\n"); },
                       "ragged row: 2 fields"),
            3u);
}

TEST(ParseCsv, FewerRunsThanParametersIsAnError) {
  EXPECT_EQ(error_line([] { (void)parse_csv("a,b,c,peak\n1,2,3,10\n2,3,4,20\n"); },
                       "2 usable runs for 3 parameters"),
            3u);
}

TEST(ParseCsv, TargetMustBePositive) {
  EXPECT_EQ(
      error_line([] { (void)parse_csv("batch,peak\n1,10\n2,0\n3,30\n"); }, "must be positive"), 3u);
}

TEST(ParseCsv, EmptyInputIsAnError) {
  EXPECT_EQ(error_line([] { (void)parse_csv("\n\n"); }, "empty file"), 1u);
}

TEST(ParseJsonl, ReadsExtraPLines) {
  const Dataset d = parse_jsonl(
      "{\"params\":{\"batch\":1,\"dim\":32,\"precision\":\"fp32\"},\"value\":10,\"metric\":"
      "\"peak\"}\n"
      "{\"params\":{\"batch\":2,\"dim\":32,\"precision\":\"bf16\"},\"value\":20}\n"
      "{\"params\":{\"dim\":64,\"batch\":4,\"precision\":\"fp32\"},\"value\":40}\n");
  EXPECT_EQ(d.params, (std::vector<std::string>{"batch", "dim"}));
  EXPECT_EQ(d.categories, (std::vector<std::string>{"precision"}));
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[2].x, (std::vector<double>{4, 64}));
  EXPECT_EQ(d.rows[2].y, 40);
  EXPECT_EQ(
      parse_table("\n  {\"params\":{\"a\":1},\"value\":1}\n{\"params\":{\"a\":2},\"value\":2}\n")
          .rows.size(),
      2u);
}

TEST(ParseJsonl, RepetitionsAsExtraPWritesThemGiveTheirMedian) {
  const Dataset d = parse_jsonl(
      "{\"params\":{\"x\":1},\"value\":[1.0,1.1,0.9]}\n"
      "{\"params\":{\"x\":2},\"value\":[2.0,2.2,9.0]}\n"  // one outlier: the median ignores it
      "{\"params\":{\"x\":3},\"value\":[3.0,3.2]}\n"
      "{\"params\":{\"x\":4},\"value\":[4.0]}\n"
      "{\"params\":{\"x\":5},\"value\":5}\n");
  ASSERT_EQ(d.rows.size(), 5u);
  EXPECT_DOUBLE_EQ(d.rows[0].y, 1.0);
  EXPECT_DOUBLE_EQ(d.rows[1].y, 2.2);
  EXPECT_DOUBLE_EQ(d.rows[2].y, 3.1);
  EXPECT_DOUBLE_EQ(d.rows[3].y, 4.0);
  EXPECT_EQ(d.rows[0].repetitions, (std::vector<double>{1.0, 1.1, 0.9}));
  EXPECT_TRUE(d.rows[3].repetitions.empty());
  EXPECT_TRUE(d.rows[4].repetitions.empty());
  const std::string good = "{\"params\":{\"x\":1},\"value\":[1,2]}\n";
  EXPECT_EQ(error_line([&] { (void)parse_jsonl(good + "{\"params\":{\"x\":2},\"value\":[]}\n"); },
                       "empty list in \"value\""),
            2u);
  EXPECT_EQ(
      error_line([&] { (void)parse_jsonl(good + "{\"params\":{\"x\":2},\"value\":[1,\"a\"]}\n"); },
                 "non-number \"a\" in \"value\""),
      2u);
  EXPECT_EQ(
      error_line([&] { (void)parse_jsonl(good + "{\"params\":{\"x\":2},\"value\":[1,-2]}\n"); },
                 "must be positive"),
      2u);
}

TEST(ParseJsonl, RepetitionsMeasureTheNoise) {
  std::string text;
  for (int x = 1; x <= 40; ++x) {
    const double v = 100.0 * x;
    // Sample standard deviation 1% of the value, 3 repetitions each.
    text += "{\"params\":{\"x\":" + std::to_string(x) + "},\"value\":[" + std::to_string(v * 0.99) +
            "," + std::to_string(v) + "," + std::to_string(v * 1.01) + "]}\n";
  }
  const Dataset d = parse_jsonl(text);
  EXPECT_NEAR(repetition_noise(d), std::sqrt(std::numbers::pi / 2 * 1e-4 / 3), 1e-6);
  EXPECT_EQ(repetition_noise(parse_jsonl("{\"params\":{\"x\":1},\"value\":1}\n"
                                         "{\"params\":{\"x\":2},\"value\":2}\n")),
            0);
}

TEST(ParseJsonl, ErrorsNameTheirLine) {
  const std::string good = "{\"params\":{\"batch\":1,\"dim\":2},\"value\":10}\n";
  EXPECT_EQ(
      error_line([&] { (void)parse_jsonl(good + "{\"params\":{\"batch\":2},\"value\":20}\n"); },
                 "missing parameter 'dim'"),
      2u);
  EXPECT_EQ(
      error_line(
          [&] {
            (void)parse_jsonl(good + "{\"params\":{\"batch\":\"x\",\"dim\":3},\"value\":20}\n");
          },
          "non-number \"x\""),
      2u);
  EXPECT_EQ(
      error_line(
          [&] {
            (void)parse_jsonl(good + "{\"params\":{\"batch\":2,\"dim\":3},\"value\":\"big\"}\n");
          },
          "non-number \"big\""),
      2u);
  EXPECT_EQ(
      error_line(
          [&] {
            (void)parse_jsonl(good + "{\"params\":{\"batch\":2,\"dim\":3,\"x\":1},\"value\":20}\n");
          },
          "unexpected parameter 'x'"),
      2u);
  EXPECT_EQ(
      error_line([&] { (void)parse_jsonl(good + "{\"params\":{\"batch\":2,\n"); }, "invalid JSON"),
      2u);
  EXPECT_EQ(error_line([&] { (void)parse_jsonl(good + "{\"value\":20}\n"); }, "\"params\""), 2u);
  EXPECT_EQ(error_line([&] { (void)parse_jsonl(good + good); }, "2 usable runs for 2 parameters"),
            2u);
}

TEST(ParsePoints, CsvIgnoresExtraColumnsAndChecksTheRest) {
  const auto points = parse_points(sweep_csv, {"batch", "dim"}, {});
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[3].values.at("dim"), 64);
  EXPECT_EQ(error_line(
                [] {
                  (void)parse_points("batch\n1\n", {"batch", "dim"}, {});
                },
                "no column 'dim'"),
            1u);
  EXPECT_EQ(error_line(
                [] {
                  (void)parse_points("batch,dim\n1,2\n1,two\n", {"batch", "dim"}, {});
                },
                "non-number 'two'"),
            3u);
  const auto jsonl =
      parse_points("{\"params\":{\"batch\":8,\"precision\":\"bf16\"}}\n", {"batch"}, {"precision"});
  ASSERT_EQ(jsonl.size(), 1u);
  EXPECT_EQ(jsonl[0].labels.at("precision"), "bf16");
}

}  // namespace
}  // namespace memwatch::model
