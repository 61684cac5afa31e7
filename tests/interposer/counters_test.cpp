// The counters, driven directly: exact for large blocks, within the stated bound for batched
// small ones, exact peaks of sums under concurrency.
#include "counting/counters.hpp"

#include <gtest/gtest.h>

#include <barrier>
#include <memory>
#include <thread>
#include <vector>

using namespace memwatch::shim;

namespace {

// Each test starts from a fresh block of its own (the process-wide block is shared).
class CountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    counters_flush_thread();
    counters_init_block(*block_, 1, 0, /*keep_peaks=*/false);
    for (auto* a : {&block_->heap_live, &block_->mmap_live, &block_->host_live, &block_->heap_peak,
                    &block_->mmap_peak, &block_->host_peak})
      a->store(0);
    block_->threads_peak.store(block_->threads_live.load());
    previous_ = &counters_block();
    counters_use_block(block_.get());
  }
  void TearDown() override {
    counters_flush_thread();
    counters_use_block(previous_);
    counters_set_batch(kBatchBytes);
  }
  std::unique_ptr<CounterBlock> block_ = std::make_unique<CounterBlock>();
  CounterBlock* previous_ = nullptr;
};

TEST_F(CountersTest, LargeBlocksAreCountedAtOnce) {
  counters_heap_add(kExactBytes);
  EXPECT_EQ(block_->heap_live.load(), kExactBytes);
  counters_heap_add(3 * kExactBytes);
  counters_heap_add(-3 * kExactBytes);
  EXPECT_EQ(block_->heap_live.load(), kExactBytes);
  EXPECT_EQ(block_->heap_peak.load(), 4 * kExactBytes);
}

TEST_F(CountersTest, SmallBlocksWaitWithinTheBatchThenFlush) {
  counters_heap_add(1000);  // registers the thread: flushed
  const std::int64_t after_first = block_->heap_live.load();
  for (int i = 0; i < 10; ++i) counters_heap_add(1000);
  // Pending on this thread, not yet global: within one batch of the truth.
  EXPECT_LE(11000 - block_->heap_live.load(), kBatchBytes);
  EXPECT_GE(block_->heap_live.load(), after_first);
  counters_flush_thread();
  EXPECT_EQ(block_->heap_live.load(), 11000);
}

TEST_F(CountersTest, ALargeBlockCarriesThePendingDeltaWithIt) {
  counters_heap_add(1);
  counters_heap_add(5000);
  counters_heap_add(kExactBytes);
  EXPECT_EQ(block_->heap_live.load(), 5001 + kExactBytes);
  EXPECT_EQ(block_->heap_peak.load(), 5001 + kExactBytes);
}

TEST_F(CountersTest, BatchZeroIsExactForEveryCall) {
  counters_set_batch(0);
  for (int i = 1; i <= 100; ++i) {
    counters_heap_add(i);
    ASSERT_EQ(block_->heap_live.load(), i * (i + 1) / 2);
  }
}

TEST_F(CountersTest, HostPeakIsThePeakOfTheSumNotTheSumOfPeaks) {
  counters_set_batch(0);
  counters_heap_add(10 << 20);
  counters_heap_add(-(10 << 20));
  counters_mmap_add(6 << 20);
  EXPECT_EQ(block_->heap_peak.load(), 10 << 20);
  EXPECT_EQ(block_->mmap_peak.load(), 6 << 20);
  EXPECT_EQ(block_->host_peak.load(), 10 << 20);
  counters_heap_add(5 << 20);
  EXPECT_EQ(block_->host_peak.load(), 11 << 20);
}

TEST_F(CountersTest, ConcurrentThreadsHoldingAtOnceGiveTheExactSum) {
  constexpr int kThreads = 8;
  constexpr std::int64_t kHold = 4 * kExactBytes;
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        counters_heap_add(kHold);
        counters_heap_add(-kHold);
      }
      counters_heap_add(kHold);
      sync.arrive_and_wait();  // all hold
      sync.arrive_and_wait();
      counters_heap_add(-kHold);
      counters_flush_thread();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(block_->heap_live.load(), 0);
  EXPECT_EQ(block_->heap_peak.load(), kThreads * kHold);
}

TEST_F(CountersTest, ManySmallCallsFromThreadsBalanceToZeroAndStayWithinTheBound) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 100000; ++i) {
        counters_heap_add(48);
        counters_heap_add(-48);
      }
    });
  }
  for (auto& t : threads) t.join();  // thread exit flushes each delta
  EXPECT_EQ(block_->heap_live.load(), 0);
  EXPECT_LE(block_->heap_peak.load(), counters_error_bound());
  EXPECT_GE(block_->threads_peak.load(), 1);
}

TEST_F(CountersTest, DeviceCountersArePerDeviceWithAnExactSumPeak) {
  counters_device_add(0, 100);
  counters_device_add(1, 50);
  counters_device_add(0, -100);
  counters_device_add(1, 70);
  EXPECT_EQ(block_->device_peak[0].load(), 100);
  EXPECT_EQ(block_->device_peak[1].load(), 120);
  EXPECT_EQ(block_->device_sum_peak.load(), 150);
  EXPECT_EQ(block_->device_sum_live.load(), 120);
  counters_device_add(kMaxDevices, 1);  // out of range: ignored
  EXPECT_EQ(block_->device_sum_live.load(), 120);
}

// Sharing with a job (counting/job.*): the process's contribution is what it holds beyond its
// base, kept in its slot, and the job's figures follow it exactly.
class JobShareTest : public CountersTest {
 protected:
  void TearDown() override {
    counters_share_with_job(nullptr);
    CountersTest::TearDown();
  }
  // Joins a fresh job block as a forked child would, having inherited `inherited` heap bytes.
  void join_with_inherited(std::int64_t inherited) {
    block_->heap_live.store(inherited);
    block_->host_live.store(inherited);
    share_.job = job_.get();
    share_.mine = mine_.get();
    share_.base = counters_snapshot(*block_);
    share_.base.threads_live = 0;
    counters_share_with_job(&share_);
  }
  std::unique_ptr<CounterBlock> job_ = std::make_unique<CounterBlock>();
  std::unique_ptr<memwatch::protocol::JobContribution> mine_ =
      std::make_unique<memwatch::protocol::JobContribution>();
  JobShare share_{};
};

TEST_F(JobShareTest, OnlyWhatIsHeldBeyondTheInheritedBaseReachesTheJob) {
  join_with_inherited(10 * kExactBytes);
  EXPECT_EQ(job_->host_live.load(), 0);
  counters_heap_add(-4 * kExactBytes);  // frees inherited blocks: the parent's, not the job's loss
  EXPECT_EQ(job_->heap_live.load(), 0);
  counters_heap_add(6 * kExactBytes);  // 12 held, 2 beyond the base
  EXPECT_EQ(job_->heap_live.load(), 2 * kExactBytes);
  EXPECT_EQ(job_->host_live.load(), 2 * kExactBytes);
  EXPECT_EQ(job_->host_peak.load(), 2 * kExactBytes);
  EXPECT_EQ(mine_->heap.load(), 2 * kExactBytes);
  counters_mmap_add(3 * 4096);  // nothing mapped was inherited: all of it is the job's
  EXPECT_EQ(job_->host_live.load(), 2 * kExactBytes + 3 * 4096);
  counters_heap_add(-12 * kExactBytes);
  EXPECT_EQ(job_->heap_live.load(), 0);
  EXPECT_EQ(job_->host_peak.load(), 2 * kExactBytes + 3 * 4096);
}

TEST_F(JobShareTest, WithdrawingTakesTheWholeContributionOnce) {
  join_with_inherited(0);
  counters_heap_add(5 * kExactBytes);
  counters_device_add(1, 7000);
  counters_share_with_job(nullptr);
  counters_withdraw(*job_, *mine_);
  counters_withdraw(*job_, *mine_);  // a second time takes nothing
  EXPECT_EQ(job_->host_live.load(), 0);
  EXPECT_EQ(job_->device_live[1].load(), 0);
  EXPECT_EQ(job_->device_sum_live.load(), 0);
  EXPECT_EQ(job_->device_peak[1].load(), 7000);
  EXPECT_EQ(mine_->heap.load(), 0);
  counters_heap_add(-5 * kExactBytes);  // after it left: the job no longer hears of it
  EXPECT_EQ(job_->host_live.load(), 0);
}

TEST_F(JobShareTest, ConcurrentThreadsShareTheExactSumWithTheJob) {
  constexpr int kThreads = 8;
  constexpr std::int64_t kHold = 4 * kExactBytes;
  join_with_inherited(2 * kHold);
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Two threads free the inherited blocks first: the job must not count that as its loss.
      if (t < 2) counters_heap_add(-kHold);
      sync.arrive_and_wait();
      counters_heap_add(kHold);
      sync.arrive_and_wait();  // all hold: 8 x kHold, 6 of them beyond the base
      sync.arrive_and_wait();
      counters_heap_add(-kHold);
      if (t < 2) counters_heap_add(kHold);
      counters_flush_thread();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(job_->heap_peak.load(), (kThreads - 2) * kHold);
  EXPECT_EQ(job_->heap_live.load(), 0);
  EXPECT_EQ(mine_->heap.load(), 0);
}

}  // namespace
