// A lock-free open-addressing table from a 64-bit key (a device pointer, a VMM handle, a mapped
// address, a pool) to a small record. cudaFree gives only the pointer, so the device and the
// size counted at allocation must be found again here. Fixed capacity in static storage: it
// never allocates, so it is usable from any hook, and it is never freed.
//
// Keys 0, 1 and 2 are reserved (empty, removed, being written); such keys are never stored.
// An insert claims the first removed or empty slot of the key's probe sequence, writes the
// record, then publishes the key; a remove takes the record and marks the slot removed, so of
// two threads removing the same key exactly one gets the record.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memwatch::shim {

struct DeviceRecord {
  std::int64_t bytes;
  std::uint64_t link;  // a mapping's VMM handle
  std::int32_t device;
  std::uint8_t kind;
};

class DeviceTable {
 public:
  static constexpr std::uint64_t kEmpty = 0, kRemoved = 1, kBusy = 2;
  // Probes are bounded so that a table filled with removed slots degrades to "not found"
  // instead of scanning everything.
  static constexpr std::size_t kMaxProbes = 4096;

  struct Slot {
    std::atomic<std::uint64_t> key;
    // Atomics although the key orders them: a remover that lost the race for a slot may still
    // read it while an insert reuses the slot (its read is then discarded).
    std::atomic<std::int64_t> bytes;
    std::atomic<std::uint64_t> link;
    std::atomic<std::int32_t> device;
    std::atomic<std::uint8_t> kind;
    // VMM handles: 2 x live mappings, plus 1 once released (see device_count.cpp).
    std::atomic<std::int64_t> state;
  };

  DeviceTable(Slot* slots, std::size_t capacity) noexcept : slots_(slots), mask_(capacity - 1) {}

  // False when the key is reserved or no slot was free within kMaxProbes.
  bool insert(std::uint64_t key, const DeviceRecord& record) noexcept;
  // The slot holding `key`, or nullptr. Valid until the key is removed.
  Slot* find(std::uint64_t key) noexcept;
  // Takes the record of `key` out; false when it is not there (or another thread took it).
  bool remove(std::uint64_t key, DeviceRecord& out) noexcept;
  static DeviceRecord read(const Slot& s) noexcept {
    return {s.bytes.load(std::memory_order_relaxed), s.link.load(std::memory_order_relaxed),
            s.device.load(std::memory_order_relaxed), s.kind.load(std::memory_order_relaxed)};
  }
  // Live entries, for tests.
  std::size_t size() const noexcept;
  void clear() noexcept;

 private:
  std::size_t home(std::uint64_t key) const noexcept {
    // Device pointers and handles are aligned: mix the high bits down (Fibonacci hashing).
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> 20) & mask_;
  }

  Slot* slots_;
  std::size_t mask_;
};

// Static storage for a table of `Capacity` slots (a power of two).
template <std::size_t Capacity>
struct DeviceTableStorage {
  static_assert((Capacity & (Capacity - 1)) == 0);
  DeviceTable::Slot slots[Capacity];
  DeviceTable table{slots, Capacity};
};

}  // namespace memwatch::shim
