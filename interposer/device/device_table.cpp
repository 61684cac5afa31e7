#include "device/device_table.hpp"

namespace memwatch::shim {

bool DeviceTable::insert(std::uint64_t key, const DeviceRecord& record) noexcept {
  if (key <= kBusy) return false;
  std::size_t i = home(key);
  for (std::size_t probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    std::uint64_t seen = s.key.load(std::memory_order_relaxed);
    if (seen != kEmpty && seen != kRemoved) continue;
    if (!s.key.compare_exchange_strong(seen, kBusy, std::memory_order_acquire)) continue;
    s.bytes.store(record.bytes, std::memory_order_relaxed);
    s.link.store(record.link, std::memory_order_relaxed);
    s.device.store(record.device, std::memory_order_relaxed);
    s.kind.store(record.kind, std::memory_order_relaxed);
    s.state.store(0, std::memory_order_relaxed);
    s.key.store(key, std::memory_order_release);
    return true;
  }
  return false;
}

DeviceTable::Slot* DeviceTable::find(std::uint64_t key) noexcept {
  if (key <= kBusy) return nullptr;
  std::size_t i = home(key);
  for (std::size_t probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    const std::uint64_t seen = s.key.load(std::memory_order_acquire);
    if (seen == key) return &s;
    if (seen == kEmpty) return nullptr;
  }
  return nullptr;
}

bool DeviceTable::remove(std::uint64_t key, DeviceRecord& out) noexcept {
  Slot* s = find(key);
  if (s == nullptr) return false;
  // Read before letting go of the slot: once it is marked removed, an insert may reuse it.
  out = read(*s);
  std::uint64_t expected = key;
  return s->key.compare_exchange_strong(expected, kRemoved, std::memory_order_acq_rel);
}

std::size_t DeviceTable::size() const noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i <= mask_; ++i)
    if (slots_[i].key.load(std::memory_order_relaxed) > kBusy) ++n;
  return n;
}

void DeviceTable::clear() noexcept {
  for (std::size_t i = 0; i <= mask_; ++i) slots_[i].key.store(kEmpty, std::memory_order_relaxed);
}

}  // namespace memwatch::shim
