// The reporter thread and the shared-memory segment.
#include "reporting/reporter.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "counting/segment.hpp"

using namespace memwatch::shim;
using namespace std::chrono_literals;

namespace {

TEST(Reporter, SamplesWhileThreadsCountAndStopsPromptly) {
  struct Client : ReporterClient {
    void started() override { ++starts; }
    void sampled(const CounterSnapshot& s) override { seen_peak = s.host_peak; }
    void stopping(const CounterSnapshot&) override { ++stops; }
    std::atomic<int> starts{0}, stops{0};
    std::atomic<std::int64_t> seen_peak{0};
  } client;
  Reporter reporter;
  ReporterOptions options;
  options.period = 1ms;
  reporter.start(options, &client, nullptr);
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t)
    workers.emplace_back([] {
      for (int i = 0; i < 2000; ++i) {
        counters_heap_add(kExactBytes);
        counters_heap_add(-kExactBytes);
      }
    });
  for (auto& w : workers) w.join();
  std::this_thread::sleep_for(20ms);
  const auto started = std::chrono::steady_clock::now();
  reporter.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
  EXPECT_GT(reporter.samples_taken(), 2u);
  EXPECT_GE(client.seen_peak.load(), kExactBytes);
  EXPECT_EQ(client.starts.load(), 1);
  EXPECT_EQ(client.stops.load(), 1);
  reporter.stop();  // twice is fine
  EXPECT_EQ(client.stops.load(), 1);
}

TEST(Reporter, WarnsOnceWhenLiveMemoryPassesTheShareOfCapacity) {
  CounterBlock block{};
  CounterBlock* previous = &counters_block();
  counters_init_block(block, 1, 0, false);
  block.host_live.store(0);
  counters_use_block(&block);
  std::atomic<int> warnings{0}, host{0}, past{0};
  ReporterOptions options;
  options.period = 1ms;
  options.host_capacity_bytes = 100 << 20;
  Reporter reporter;
  reporter.start(options, nullptr, [&](const CapacityWarning& w) {
    ++warnings;
    host += w.device == -1;
    past += w.finding.kind == memwatch::protocol::WatchKind::near_capacity;
  });
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(warnings.load(), 0);
  counters_mmap_add(95 << 20);
  for (int i = 0; i < 200 && warnings.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(10ms);
  reporter.stop();
  counters_mmap_add(-(95 << 20));
  counters_use_block(previous);
  EXPECT_EQ(warnings.load(), 1);
  EXPECT_EQ(host.load(), 1);
  EXPECT_EQ(past.load(), 1);
}

std::int64_t one_device_of_64_mib(int device) noexcept {
  return device == 1 ? 64 << 20 : 0;
}

TEST(Reporter, WatchesEachDeviceAgainstItsOwnCapacity) {
  CounterBlock block{};
  CounterBlock* previous = &counters_block();
  counters_init_block(block, 1, 0, false);
  counters_use_block(&block);
  std::atomic<int> warnings{0}, device{-2};
  ReporterOptions options;
  options.period = 1ms;
  options.device_capacity = one_device_of_64_mib;
  options.watch.share = 0.5;
  Reporter reporter;
  reporter.start(options, nullptr, [&](const CapacityWarning& w) {
    ++warnings;
    device = w.device;
  });
  counters_device_add(0, 60 << 20);  // no capacity known for device 0
  counters_device_add(1, 40 << 20);  // past half of device 1's
  for (int i = 0; i < 200 && warnings.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(10ms);
  reporter.stop();
  counters_device_add(0, -(60 << 20));
  counters_device_add(1, -(40 << 20));
  counters_use_block(previous);
  EXPECT_EQ(warnings.load(), 1);
  EXPECT_EQ(device.load(), 1);
}

TEST(Segment, AWatcherReadsTheLastValuesUntilItIsRemoved) {
  const int pid = 900000 + static_cast<int>(getpid() % 1000);  // not a live pid of ours
  CounterBlock* block = segment_create(pid);
  ASSERT_NE(block, nullptr);
  block->magic = CounterBlock::kMagic;
  block->version = CounterBlock::kBlockVersion;
  block->pid = pid;
  block->host_peak.store(777);
  block->heap_live.store(55);
  const auto seen = segment_read(pid);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->host_peak, 777);
  EXPECT_EQ(seen->heap_live, 55);
  EXPECT_FALSE(seen->exited);
  segment_remove(pid);
  EXPECT_FALSE(segment_read(pid).has_value());
}

TEST(Segment, ReadingAMissingOrForeignSegmentIsEmpty) {
  EXPECT_FALSE(segment_read(999999999).has_value());
}

}  // namespace
