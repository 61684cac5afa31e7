// The capacity watch's growth rate from a known truth: exact on a straight line, nothing on a
// flat, falling or stepped level, nothing from too few samples or too short a span.
#include "memwatch/protocol/trend.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace memwatch::protocol;

namespace {

constexpr double MiB = 1 << 20;

TEST(Trend, AStraightLineGivesItsSlopeExactly) {
  Trend t;
  for (int i = 0; i < 50; ++i) t.add(0.1 * i, 7 * MiB + 3 * MiB * (0.1 * i));
  EXPECT_NEAR(t.rate({}), 3 * MiB, 1e-6);
}

TEST(Trend, OnlyTheWindowCounts) {
  Trend t;
  // Fast growth long ago, then 1 MiB/s for the last 10 s: the window sees only the latter.
  double bytes = 0;
  for (int i = 0; i <= 100; ++i) t.add(0.1 * i, bytes += 5 * MiB);
  for (int i = 101; i <= 210; ++i) t.add(0.1 * i, bytes += 0.1 * MiB);
  EXPECT_NEAR(t.rate({}), 1 * MiB, 1e-3);
}

TEST(Trend, TheRingKeepsTheNewestSamples) {
  Trend t;
  WatchSettings s;
  s.window_s = 1e9;
  for (int i = 0; i < 3 * Trend::kPoints; ++i) t.add(i, i < Trend::kPoints ? 0 : 2.0 * i);
  EXPECT_EQ(t.size(), Trend::kPoints);
  EXPECT_NEAR(t.rate(s), 2, 1e-9);
}

TEST(Trend, FlatFallingAndSteppedLevelsDoNotGrow) {
  Trend flat, falling, stepped;
  for (int i = 0; i < 100; ++i) {
    flat.add(0.1 * i, 64 * MiB);
    falling.add(0.1 * i, 64 * MiB - 0.1 * MiB * i);
    stepped.add(0.1 * i, i < 30 ? 1 * MiB : 500 * MiB);  // a model loaded, then training
  }
  EXPECT_EQ(flat.rate({}), 0);
  EXPECT_EQ(falling.rate({}), 0);
  EXPECT_EQ(stepped.rate({}), 0);
}

TEST(Trend, TooFewSamplesOrTooShortASpanSayNothing) {
  Trend few, brief;
  for (int i = 0; i < 4; ++i) few.add(i, (i % 2 ? 100 : 1) * MiB * (i + 1));
  for (int i = 0; i < 20; ++i) brief.add(0.05 * i, MiB * i);  // 0.95 s
  EXPECT_EQ(few.rate({}), 0);
  EXPECT_EQ(brief.rate({}), 0);
  for (int i = 20; i <= 40; ++i) brief.add(0.05 * i, MiB * i);  // now 2 s
  EXPECT_NEAR(brief.rate({}), 20 * MiB, 1e-3);
}

TEST(Trend, TimeGoingBackStartsOver) {
  Trend t;
  for (int i = 0; i < 30; ++i) t.add(0.1 * i, MiB * i);
  t.add(0.5, 0);
  EXPECT_EQ(t.size(), 1);
  EXPECT_EQ(t.rate({}), 0);
}

TEST(CapacityWatch, WarnsOnCourseOnceWithTheTimeToTheThreshold) {
  CapacityWatch w;
  WatchSettings s;  // 90% within 30 s
  const auto capacity = static_cast<std::int64_t>(1000 * MiB);
  int on_course = 0;
  WatchFinding first;
  // 20 MiB/s from 100 MiB: the threshold (900 MiB) is 40 s away at first, 30 s away at 10 s.
  for (int i = 0; i <= 150; ++i) {
    const double t = 0.1 * i;
    const WatchFinding f =
        w.observe(t, static_cast<std::int64_t>(100 * MiB + 20 * MiB * t), capacity, s);
    if (f.kind == WatchKind::on_course && on_course++ == 0) first = f;
    EXPECT_NE(f.kind, WatchKind::near_capacity);
  }
  ASSERT_EQ(on_course, 1);
  EXPECT_NEAR(first.rate_bytes_per_s, 20 * MiB, 4);  // bytes are whole
  EXPECT_LE(first.eta_s, 30);
  EXPECT_GT(first.eta_s, 29);
  EXPECT_NEAR(first.eta_s, (first.threshold_bytes - first.live_bytes) / first.rate_bytes_per_s,
              1e-9);
  EXPECT_EQ(first.threshold_bytes, 900 * MiB);
}

TEST(CapacityWatch, CrossingTheShareWarnsOnceAndAFlatLevelNever) {
  CapacityWatch flat, crossing;
  WatchSettings s;
  s.share = 0.5;
  const auto capacity = static_cast<std::int64_t>(100 * MiB);
  int crossed = 0;
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(flat.observe(0.1 * i, static_cast<std::int64_t>(40 * MiB), capacity, s).kind,
              WatchKind::none);
    const auto live = static_cast<std::int64_t>(i < 100 ? 10 * MiB : 60 * MiB);
    crossed += crossing.observe(0.1 * i, live, capacity, s).kind == WatchKind::near_capacity;
  }
  EXPECT_EQ(crossed, 1);
}

TEST(CapacityWatch, NoCapacityOrNoHorizonNoWarning) {
  CapacityWatch unknown, no_horizon;
  WatchSettings s;
  s.horizon_s = 0;
  for (int i = 0; i < 100; ++i) {
    const auto live = static_cast<std::int64_t>(MiB * i);
    EXPECT_EQ(unknown.observe(0.1 * i, live, 0, {}).kind, WatchKind::none);
    EXPECT_EQ(no_horizon.observe(0.1 * i, live, static_cast<std::int64_t>(200 * MiB), s).kind,
              WatchKind::none);
  }
  // A capacity learnt later is judged on the trend already recorded.
  EXPECT_EQ(unknown
                .observe(10, static_cast<std::int64_t>(100 * MiB),
                         static_cast<std::int64_t>(200 * MiB), {})
                .kind,
            WatchKind::on_course);
}

TEST(WatchSettings, SharesAndSecondsAsText) {
  EXPECT_DOUBLE_EQ(parse_watch_share("0.75"), 0.75);
  EXPECT_DOUBLE_EQ(parse_watch_share(" 95% "), 0.95);
  EXPECT_EQ(parse_watch_share("1"), 1);
  EXPECT_EQ(parse_watch_share("0"), -1);
  EXPECT_EQ(parse_watch_share("101%"), -1);
  EXPECT_EQ(parse_watch_share("most"), -1);
  EXPECT_EQ(parse_watch_share("nan"), -1);
  EXPECT_EQ(parse_watch_seconds("30"), 30);
  EXPECT_EQ(parse_watch_seconds("2.5 s"), 2.5);
  EXPECT_EQ(parse_watch_seconds("0"), 0);
  EXPECT_EQ(parse_watch_seconds("-1"), -1);
  EXPECT_EQ(parse_watch_seconds("s"), -1);
  EXPECT_EQ(parse_watch_seconds(""), -1);
}

}  // namespace
