#include "segment.hpp"

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <new>

namespace memwatch::shim {

namespace bip = boost::interprocess;

std::string segment_name(int pid) { return "memwatch." + std::to_string(pid); }

CounterBlock* segment_create(int pid) noexcept {
  try {
    const std::string name = segment_name(pid);
    bip::shared_memory_object::remove(name.c_str());  // a stale one from a reused pid
    bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write);
    shm.truncate(sizeof(CounterBlock));
    // Deliberately leaked: the mapping must stay valid for hooks that run during exit.
    auto* region = new bip::mapped_region(shm, bip::read_write);
    return new (region->get_address()) CounterBlock{};
  } catch (...) {
    return nullptr;
  }
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

}  // namespace memwatch::shim
