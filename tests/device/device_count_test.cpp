// The device table and the accounting on top of it, directly (also under ASan and TSan).
#include "device/device_count.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "counting/counters.hpp"
#include "device/device_table.hpp"

using namespace memwatch::shim;

namespace {

constexpr std::int64_t MiB = 1024 * 1024;

class DeviceCount : public ::testing::Test {
 protected:
  void SetUp() override {
    counters_use_block(&block_);
    device_count_reset_for_test();
  }
  void TearDown() override { device_count_reset_for_test(); }

  std::int64_t live(int d) const { return block_.device_live[d].load(); }
  std::int64_t peak(int d) const { return block_.device_peak[d].load(); }

  CounterBlock block_{};
};

TEST(DeviceTable, InsertFindRemoveAndReuse) {
  static DeviceTableStorage<64> storage;
  DeviceTable& t = storage.table;
  EXPECT_FALSE(t.insert(1, {}));  // reserved keys are refused
  EXPECT_TRUE(t.insert(0x1000, DeviceRecord{5, 0, 1, 0}));
  ASSERT_NE(t.find(0x1000), nullptr);
  DeviceRecord r{};
  EXPECT_TRUE(t.remove(0x1000, r));
  EXPECT_EQ(r.bytes, 5);
  EXPECT_EQ(r.device, 1);
  EXPECT_FALSE(t.remove(0x1000, r));
  // Removed slots are reused: many more inserts than slots, each removed again.
  for (std::uint64_t k = 0; k < 10000; ++k) {
    ASSERT_TRUE(t.insert(0x10000 + k * 256, DeviceRecord{1, 0, 0, 0}));
    ASSERT_TRUE(t.remove(0x10000 + k * 256, r));
  }
  EXPECT_EQ(t.size(), 0u);
  for (std::uint64_t k = 0; k < 64; ++k) ASSERT_TRUE(t.insert(0x100 + k, {}));
  EXPECT_FALSE(t.insert(0x5000, {}));  // full
}

TEST_F(DeviceCount, AllocationsCountedOnceWhoeverSeesThemFirst) {
  device_note_alloc(0x7000, DeviceKind::device, 0, 8 * MiB, kSourceCupti);
  device_note_alloc(0x7000, DeviceKind::device, 0, 8 * MiB, kSourceRuntime);  // same block
  EXPECT_EQ(live(0), 8 * MiB);
  EXPECT_EQ(device_sources(), kSourceCupti);
  DeviceAllocation a{};
  EXPECT_TRUE(device_note_free(0x7000, a));
  EXPECT_FALSE(device_note_free(0x7000, a));
  EXPECT_EQ(live(0), 0);
  EXPECT_EQ(peak(0), 8 * MiB);
}

TEST_F(DeviceCount, AFailedFreeMakesTheBlockLiveAgain) {
  device_note_alloc(0x9000, DeviceKind::device, 2, 3 * MiB, kSourceDriver);
  DeviceAllocation a{};
  ASSERT_TRUE(device_note_free(0x9000, a));
  device_undo_free(0x9000, a);
  EXPECT_EQ(live(2), 3 * MiB);
  EXPECT_EQ(peak(2), 3 * MiB);
}

TEST_F(DeviceCount, PinnedAndManagedAreNotDeviceMemory) {
  device_note_alloc(0xa000, DeviceKind::pinned, 0, 2 * MiB, kSourceRuntime);
  device_note_alloc(0xb000, DeviceKind::managed, 0, 4 * MiB, kSourceRuntime);
  EXPECT_EQ(block_.device_sum_peak.load(), 0);
  EXPECT_EQ(block_.pinned_peak.load(), 2 * MiB);
  EXPECT_EQ(block_.managed_peak.load(), 4 * MiB);
}

TEST_F(DeviceCount, PoolsCountTheirReservedSize) {
  device_note_alloc(0xc000, DeviceKind::pooled, 1, 3 * MiB, kSourceRuntime);
  device_note_pool(0x55, 1, 4 * MiB, kSourceRuntime);
  device_note_pool(0x55, 1, 8 * MiB, kSourceRuntime);
  device_note_pool(0x55, 1, 2 * MiB, kSourceRuntime);
  EXPECT_EQ(live(1), 2 * MiB);
  EXPECT_EQ(peak(1), 8 * MiB);
  DeviceAllocation a{};
  ASSERT_TRUE(device_note_free(0xc000, a));
  EXPECT_EQ(a.kind, DeviceKind::pooled);
  EXPECT_EQ(live(1), 2 * MiB);  // a pooled block's free leaves the pool as it is
}

TEST_F(DeviceCount, VmmMemoryLivesUntilReleasedAndUnmapped) {
  device_vmm_create(0x1111, DeviceKind::device, 0, 2 * MiB, kSourceDriver);
  device_vmm_create(0x2222, DeviceKind::device, 0, 2 * MiB, kSourceDriver);
  device_vmm_map(0x100000, 2 * MiB, 0x1111);
  device_vmm_map(0x300000, 2 * MiB, 0x2222);
  device_vmm_map(0x900000, 2 * MiB, 0x2222);  // one handle mapped twice
  device_vmm_release(0x1111);
  EXPECT_EQ(live(0), 4 * MiB);
  device_vmm_unmap(0x100000, 4 * MiB);  // both mappings in the range
  EXPECT_EQ(live(0), 2 * MiB);          // 0x1111 gone; 0x2222 not released
  device_vmm_release(0x2222);
  EXPECT_EQ(live(0), 2 * MiB);  // still mapped at 0x900000
  device_vmm_unmap(0x900000, 2 * MiB);
  EXPECT_EQ(live(0), 0);
  EXPECT_EQ(peak(0), 4 * MiB);
}

TEST_F(DeviceCount, AnUnmapAcrossAHoleFindsTheMappingsBeyondIt) {
  device_vmm_create(0x3333, DeviceKind::device, 0, 2 * MiB, kSourceDriver);
  device_vmm_create(0x4444, DeviceKind::device, 0, 2 * MiB, kSourceDriver);
  device_vmm_map(0x40000000, 2 * MiB, 0x3333);
  device_vmm_map(0x40000000 + 6 * MiB, 2 * MiB, 0x4444);  // 4 MiB unmapped between
  device_vmm_release(0x3333);
  device_vmm_release(0x4444);
  EXPECT_EQ(live(0), 4 * MiB);
  device_vmm_unmap(0x40000000, 8 * MiB);
  EXPECT_EQ(live(0), 0);
}

TEST_F(DeviceCount, ConcurrentAllocationsAndFreesBalance) {
  constexpr int kThreads = 4, kRounds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kRounds; ++i) {
        const std::uint64_t p = 0x100000000ULL * static_cast<std::uint64_t>(t + 1) +
                                static_cast<std::uint64_t>(i % 16) * 0x10000;
        device_note_alloc(p, DeviceKind::device, t % 2, MiB, kSourceDriver);
        DeviceAllocation a{};
        device_note_free(p, a);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(live(0), 0);
  EXPECT_EQ(live(1), 0);
  EXPECT_LE(peak(0), 2 * MiB);
}

TEST(DeviceDepthScope, OnlyTheOutermostCallIsTheProgramsOwn) {
  DeviceCallScope outer;
  EXPECT_TRUE(outer.outer());
  {
    DeviceCallScope inner;
    EXPECT_FALSE(inner.outer());
  }
  DeviceCallScope again;
  EXPECT_FALSE(again.outer());
}

}  // namespace
