// The figure list and what is generated from it: every figure crosses the wire, the SAMPLE and
// BYE frames keep the version-1 layout byte for byte, the counters' block and snapshot carry every
// counted figure, and sizes and names read the same on every side.
#include "memwatch/protocol/figures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "memwatch/protocol/counter_block.hpp"
#include "memwatch/protocol/parse.hpp"
#include "memwatch/protocol/wire.hpp"

using namespace memwatch::protocol;

namespace {

// A value no other figure has: a figure read into another's place shows.
std::int64_t distinct(const Figure& f) {
  return 1000 + 17 * static_cast<std::int64_t>(figure_index(f));
}

TEST(Figures, NamesAndReportPlacesAreUnique) {
  std::set<std::string_view> names;
  std::set<std::pair<std::string_view, std::string_view>> places;
  for (const Figure& f : kFigures) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(places.insert({f.report_group, f.report_key}).second) << f.name;
    EXPECT_TRUE(f.report_group.empty() || f.report_group == "host") << f.name;
    EXPECT_EQ(figure_index(f.name), figure_index(f));
  }
  EXPECT_EQ(figure_index("no_such_figure"), kFigureCount);
  // The models' targets are run figures.
  for (const char* target : {kHostPeakTarget, kDevicePeakTarget}) {
    ASSERT_LT(figure_index(target), kFigureCount) << target;
    EXPECT_TRUE(kFigures[figure_index(target)].run) << target;
  }
}

TEST(Figures, EverySampleFigureCrossesTheWire) {
  Sample m;
  m.pid = 7;
  m.t_s = 0.25;
  for_each_sample_figure(m, [](const Figure& f, std::int64_t& v) { v = distinct(f); });
  const auto back = decode(encode(m));
  ASSERT_TRUE(back.has_value());
  const auto* sample = std::get_if<Sample>(&*back);
  ASSERT_NE(sample, nullptr);
  std::size_t seen = 0;
  for_each_sample_figure(*sample, [&](const Figure& f, std::int64_t v) {
    EXPECT_EQ(v, distinct(f)) << f.name;
    EXPECT_TRUE(f.sample) << f.name;
    ++seen;
  });
  std::size_t listed = 0;
  for (const Figure& f : kFigures) listed += f.sample;
  EXPECT_EQ(seen, listed);
  EXPECT_EQ(*sample, m);
}

TEST(Figures, EveryRunFigureAndEachDevicePeakCrossTheWire) {
  Bye m;
  m.pid = 7;
  m.elapsed_s = 3.5;
  for_each_run_figure(m, [](const Figure& f, std::int64_t& v) { v = distinct(f); });
  m.device_peaks = {11, 0, 13};
  m.cause = ExitCause::underscore_exit;
  m.detail = 3;
  const auto back = decode(encode(m));
  ASSERT_TRUE(back.has_value());
  const auto* bye = std::get_if<Bye>(&*back);
  ASSERT_NE(bye, nullptr);
  std::size_t seen = 0;
  for_each_run_figure(*bye, [&](const Figure& f, std::int64_t v) {
    EXPECT_EQ(v, distinct(f)) << f.name;
    EXPECT_TRUE(f.run) << f.name;
    ++seen;
  });
  std::size_t listed = 0;
  for (const Figure& f : kFigures) listed += f.run;
  EXPECT_EQ(seen, listed);
  EXPECT_EQ(bye->device_peaks, m.device_peaks);
  EXPECT_EQ(*bye, m);
}

// The frames written out by hand (version 1 as it was before the list, and version 2, whose BYE
// added `processes` at the end): a figure moved, dropped or added without a new wire version
// fails here.
template <typename T>
void put(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof v);
  out.append(bytes, sizeof v);
}

TEST(Figures, SampleAndByeKeepTheVersionTwoLayout) {
  Sample s{4242, 1.25, 100, 200, 60, 40, 1000, 2000};
  std::string sample = {'M', 2, 2, 0};
  put<std::uint32_t>(sample, 4242);
  put<double>(sample, 1.25);
  for (std::int64_t v : {100, 200, 60, 40, 1000, 2000}) put<std::int64_t>(sample, v);
  EXPECT_EQ(encode(s), sample);
  EXPECT_EQ(s.host_live_bytes, 100);
  EXPECT_EQ(s.host_peak_bytes, 200);
  EXPECT_EQ(s.heap_live_bytes, 60);
  EXPECT_EQ(s.mmap_live_bytes, 40);
  EXPECT_EQ(s.device_live_bytes, 1000);
  EXPECT_EQ(s.device_peak_bytes, 2000);

  Bye b;
  b.pid = 4242;
  b.elapsed_s = 12.5;
  b.host_peak_bytes = 1;
  b.heap_peak_bytes = 2;
  b.mmap_peak_bytes = 3;
  b.device_peak_bytes = 4;
  b.pinned_peak_bytes = 5;
  b.managed_peak_bytes = 6;
  b.rss_hwm_bytes = 7;
  b.processes = 3;
  b.device_peaks = {8, 9};
  b.cause = ExitCause::signal;
  b.detail = 9;
  std::string bye = {'M', 2, 3, 0};
  put<std::uint32_t>(bye, 4242);
  put<double>(bye, 12.5);
  for (std::int64_t v : {1, 2, 3, 4, 5, 6, 7, 3}) put<std::int64_t>(bye, v);
  put<std::uint16_t>(bye, 2);
  put<std::int64_t>(bye, 8);
  put<std::int64_t>(bye, 9);
  put<std::uint8_t>(bye, 2);
  put<std::int32_t>(bye, 9);
  EXPECT_EQ(encode(b), bye);
}

TEST(Figures, TheBlockAndItsSnapshotCarryEveryCountedFigure) {
  static CounterBlock block{};
  CounterSnapshot in{};
  for_each_figure(in, [](const Figure& f, std::int64_t& v) { v = distinct(f); });
  for (int i = 0; i < kMaxDevices; ++i) {
    in.device_live[i] = i;
    in.device_peak[i] = 100 + i;
  }
  counters_store(block, in, /*keep_peaks=*/true);
  const CounterSnapshot out = counters_snapshot(block);
  for_each_figure(out, [&](const Figure& f, std::int64_t v) {
    // A figure of source `process` has no counter: its reader fills it in.
    EXPECT_EQ(v, f.source == FigureSource::counter ? distinct(f) : 0) << f.name;
  });
  for (int i = 0; i < kMaxDevices; ++i) EXPECT_EQ(out.device_peak[i], 100 + i);
  EXPECT_EQ(device_peaks_of(out).size(), static_cast<std::size_t>(kMaxDevices));

  // A forked child's peaks restart from the live value each follows.
  counters_store(block, in, /*keep_peaks=*/false);
  const CounterSnapshot child = counters_snapshot(block);
  EXPECT_EQ(child.host_peak, in.host_live);
  EXPECT_EQ(child.heap_peak, in.heap_live);
  EXPECT_EQ(child.mmap_peak, in.mmap_live);
  EXPECT_EQ(child.device_sum_peak, in.device_sum_live);
  EXPECT_EQ(child.threads_peak, in.threads_live);
  EXPECT_EQ(child.device_peak[3], 3);
  for_each_figure(child, [&](const Figure& f, std::int64_t v) {
    if (f.source == FigureSource::counter && f.stat == FigureStat::live) {
      EXPECT_EQ(v, distinct(f)) << f.name;
    }
  });
}

TEST(Figures, ASnapshotFillsSampleAndByeByName) {
  CounterSnapshot s{};
  for_each_figure(s, [](const Figure& f, std::int64_t& v) { v = distinct(f); });
  Sample m;
  copy_sample_figures(s, m);
  for_each_sample_figure(m, [](const Figure& f, std::int64_t v) { EXPECT_EQ(v, distinct(f)); });
  Bye b;
  copy_run_figures(s, b);
  for_each_run_figure(b, [](const Figure& f, std::int64_t v) { EXPECT_EQ(v, distinct(f)); });
  EXPECT_EQ(b.device_peak_bytes, s.device_sum_peak);
  EXPECT_EQ(b.rss_hwm_bytes, s.rss_hwm);
}

TEST(Figures, TheSweepMeasuresEveryRunFigure) {
  const auto columns = sweep_measure_columns();
  for (const Figure& f : kFigures)
    EXPECT_EQ(std::count(columns.begin(), columns.end(), f.name), f.run ? 1 : 0) << f.name;
  EXPECT_EQ(columns[columns.size() - 2], "elapsed_s");
  EXPECT_EQ(columns.back(), "exit_status");
}

TEST(Parse, SizesAndNamesReadTheSameOnEverySide) {
  EXPECT_EQ(parse_size("1000"), 1000);
  EXPECT_EQ(parse_size(" 24GiB "), 24LL << 30);
  EXPECT_EQ(parse_size("512MiB"), 512LL << 20);
  EXPECT_EQ(parse_size("1.5G"), 3LL << 29);
  EXPECT_EQ(parse_size("2KB"), 2000);
  EXPECT_EQ(parse_size(""), -1);
  EXPECT_EQ(parse_size("-1"), -1);
  EXPECT_EQ(parse_size("1..5G"), -1);
  EXPECT_EQ(parse_size("5 parsecs"), -1);
  EXPECT_TRUE(valid_name("unet3d-train.v2_x"));
  EXPECT_TRUE(valid_name(std::string(kMaxNameLength, 'a')));
  EXPECT_FALSE(valid_name(std::string(kMaxNameLength + 1, 'a')));
  EXPECT_FALSE(valid_name(""));
  EXPECT_FALSE(valid_name("a b"));
  EXPECT_FALSE(valid_name("a/b"));
}

TEST(RunFacts, ExitCausesHaveTheReportsNames) {
  EXPECT_STREQ(exit_cause_name(ExitCause::exit), "exit");
  EXPECT_STREQ(exit_cause_name(ExitCause::underscore_exit), "_exit");
  EXPECT_STREQ(exit_cause_name(ExitCause::signal), "signal");
  EXPECT_STREQ(exit_cause_name(ExitCause::killed), "killed");
}

}  // namespace
