// The page map: exact accounting of partial unmaps, overlapping maps and concurrent updates.
#include "counting/page_map.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using namespace memwatch::shim;

namespace {

constexpr std::uintptr_t kBase = std::uintptr_t{0x5a0000000000};  // an address nobody uses here
constexpr std::int64_t kPage = static_cast<std::int64_t>(kPageSize);

TEST(PageMap, SetCountsOnlyNewPagesAndClearOnlyMarkedOnes) {
  EXPECT_EQ(page_map_set(kBase, 16 * kPageSize), 16 * kPage);
  EXPECT_EQ(page_map_set(kBase + 8 * kPageSize, 16 * kPageSize), 8 * kPage);  // overlap
  EXPECT_EQ(page_map_count(kBase, 24 * kPageSize), 24 * kPage);
  EXPECT_EQ(page_map_clear(kBase + 4 * kPageSize, 4 * kPageSize), 4 * kPage);  // a hole
  EXPECT_EQ(page_map_clear(kBase + 4 * kPageSize, 4 * kPageSize), 0);          // twice: none
  EXPECT_EQ(page_map_clear(kBase, 64 * kPageSize), 20 * kPage);
  EXPECT_EQ(page_map_count(kBase, 64 * kPageSize), 0);
}

TEST(PageMap, PartialPagesRoundToWholePages) {
  EXPECT_EQ(page_map_set(kBase, 1), kPage);
  EXPECT_EQ(page_map_clear(kBase, kPageSize + 1), kPage);
}

TEST(PageMap, SpansCrossingLeavesAndWords) {
  const std::uintptr_t leaf_edge =
      (kBase + (std::uintptr_t{4} << 30)) & ~((std::uintptr_t{4} << 30) - 1);
  const std::uintptr_t start = leaf_edge - 100 * kPageSize;
  EXPECT_EQ(page_map_set(start, 300 * kPageSize), 300 * kPage);
  EXPECT_EQ(page_map_count(leaf_edge, 200 * kPageSize), 200 * kPage);
  EXPECT_EQ(page_map_clear(start, 300 * kPageSize), 300 * kPage);
}

TEST(PageMap, AddressesBeyondTheTrackedSpaceAreNeverCounted) {
  EXPECT_EQ(page_map_set(std::uintptr_t{1} << 50, kPageSize), 0);
}

TEST(PageMap, ConcurrentNeighboursInTheSameWordStayExact) {
  constexpr int kThreads = 4;
  const std::uintptr_t base = kBase + (std::uintptr_t{1} << 32);
  std::vector<std::thread> threads;
  std::vector<std::int64_t> set(kThreads), cleared(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2000; ++round) {
        // Thread t owns pages t, t+4, t+8, ...: all share words with the other threads.
        for (int p = t; p < 256; p += kThreads) {
          set[t] += page_map_set(base + static_cast<std::uintptr_t>(p) * kPageSize, kPageSize);
        }
        for (int p = t; p < 256; p += kThreads) {
          cleared[t] +=
              page_map_clear(base + static_cast<std::uintptr_t>(p) * kPageSize, kPageSize);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(set[t], std::int64_t{2000} * 64 * kPage);
    EXPECT_EQ(cleared[t], set[t]);
  }
  EXPECT_EQ(page_map_count(base, 256 * kPageSize), 0);
}

}  // namespace
