#include "counting/segment.hpp"

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <new>

namespace memwatch::shim {

namespace bip = boost::interprocess;

namespace {

// Every mapping the process made, kept reachable: never destroyed (hooks may count into them
// during exit), and a forked child keeps its parent's beside its own.
struct Mapping {
  bip::mapped_region region;
  Mapping* earlier;
};
Mapping* g_mappings = nullptr;

// Maps `shm` for the rest of the process's life.
void* map_for_life(bip::shared_memory_object& shm) {
  g_mappings = new Mapping{bip::mapped_region(shm, bip::read_write), g_mappings};
  return g_mappings->region.get_address();
}

}  // namespace

void* segment_create_named(const std::string& name, std::size_t size) noexcept {
  try {
    bip::shared_memory_object::remove(name.c_str());  // a stale one from a reused pid
    bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write);
    shm.truncate(static_cast<bip::offset_t>(size));
    return map_for_life(shm);
  } catch (...) {
    return nullptr;
  }
}

void* segment_open_named(const std::string& name, std::size_t size) noexcept {
  try {
    bip::shared_memory_object shm(bip::open_only, name.c_str(), bip::read_write);
    bip::offset_t have = 0;
    if (!shm.get_size(have) || static_cast<std::size_t>(have) < size) return nullptr;
    return map_for_life(shm);
  } catch (...) {
    return nullptr;
  }
}

CounterBlock* segment_create(int pid) noexcept {
  void* memory = segment_create_named(segment_name(pid), sizeof(CounterBlock));
  return memory == nullptr ? nullptr : new (memory) CounterBlock{};
}

}  // namespace memwatch::shim
