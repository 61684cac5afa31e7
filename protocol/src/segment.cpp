#include "memwatch/protocol/segment.hpp"

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include "memwatch/protocol/job_block.hpp"

namespace memwatch::protocol {

namespace bip = boost::interprocess;

namespace {

void remove_named(const std::string& name) noexcept {
  try {
    bip::shared_memory_object::remove(name.c_str());
  } catch (...) {
  }
}

// The counters of the Block in segment `name`, if it is one of this layout.
template <class Block>
std::optional<CounterSnapshot> read_named(const std::string& name,
                                          const CounterBlock& (*counters)(const Block&)) noexcept {
  try {
    bip::shared_memory_object shm(bip::open_only, name.c_str(), bip::read_only);
    bip::offset_t size = 0;
    if (!shm.get_size(size) || static_cast<std::size_t>(size) < sizeof(Block)) return std::nullopt;
    bip::mapped_region region(shm, bip::read_only, 0, sizeof(Block));
    const auto* block = static_cast<const Block*>(region.get_address());
    if (block->magic != Block::kMagic || block->version != Block::kBlockVersion)
      return std::nullopt;
    const CounterBlock& c = counters(*block);
    if (c.magic != CounterBlock::kMagic || c.version != CounterBlock::kBlockVersion)
      return std::nullopt;
    return counters_snapshot(c);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::string segment_name(int pid) {
  return "memwatch." + std::to_string(pid);
}

void segment_remove(int pid) noexcept {
  remove_named(segment_name(pid));
}

std::optional<CounterSnapshot> segment_read(int pid) noexcept {
  return read_named<CounterBlock>(segment_name(pid),
                                  [](const CounterBlock& b) -> const CounterBlock& { return b; });
}

std::string job_segment_name(int root_pid) {
  return "memwatch.job." + std::to_string(root_pid);
}

void job_segment_remove(int root_pid) noexcept {
  remove_named(job_segment_name(root_pid));
}

std::optional<CounterSnapshot> job_segment_read(int root_pid) noexcept {
  return read_named<JobBlock>(job_segment_name(root_pid),
                              [](const JobBlock& b) -> const CounterBlock& { return b.counters; });
}

}  // namespace memwatch::protocol
