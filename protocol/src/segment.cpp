#include "memwatch/protocol/segment.hpp"

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

namespace memwatch::protocol {

namespace bip = boost::interprocess;

std::string segment_name(int pid) {
  return "memwatch." + std::to_string(pid);
}

void segment_remove(int pid) noexcept {
  try {
    bip::shared_memory_object::remove(segment_name(pid).c_str());
  } catch (...) {
  }
}

std::optional<CounterSnapshot> segment_read(int pid) noexcept {
  try {
    bip::shared_memory_object shm(bip::open_only, segment_name(pid).c_str(), bip::read_only);
    bip::offset_t size = 0;
    if (!shm.get_size(size) || static_cast<std::size_t>(size) < sizeof(CounterBlock))
      return std::nullopt;
    bip::mapped_region region(shm, bip::read_only, 0, sizeof(CounterBlock));
    const auto* block = static_cast<const CounterBlock*>(region.get_address());
    if (block->magic != CounterBlock::kMagic || block->version != CounterBlock::kBlockVersion)
      return std::nullopt;
    return counters_snapshot(*block);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace memwatch::protocol
