#include "counting/segment.hpp"

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <new>

namespace memwatch::shim {

namespace bip = boost::interprocess;

CounterBlock* segment_create(int pid) noexcept {
  try {
    const std::string name = segment_name(pid);
    bip::shared_memory_object::remove(name.c_str());  // a stale one from a reused pid
    bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write);
    shm.truncate(sizeof(CounterBlock));
    // Kept in static storage and never destroyed: the mapping must stay valid for hooks that
    // run during exit. A forked child's segment replaces the object, not the parent's mapping.
    alignas(bip::mapped_region) static unsigned char storage[sizeof(bip::mapped_region)];
    auto* region = new (storage) bip::mapped_region(shm, bip::read_write);
    return new (region->get_address()) CounterBlock{};
  } catch (...) {
    return nullptr;
  }
}

}  // namespace memwatch::shim
