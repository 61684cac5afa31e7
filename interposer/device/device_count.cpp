#include "device/device_count.hpp"

#include <atomic>

#include "counting/counters.hpp"
#include "device/device_table.hpp"
#include "reporting/log.hpp"

namespace memwatch::shim {

constinit thread_local DeviceDepth tls_device_depth __attribute__((tls_model("initial-exec"))) = {};

namespace {

// Large enough for PyTorch's caching allocator many times over (it holds hundreds of segments);
// the stream-ordered allocator keeps one entry per live tensor.
DeviceTableStorage<1u << 16> g_allocations;
DeviceTableStorage<1u << 12> g_handles;   // VMM handle -> bytes, device, kind; state
DeviceTableStorage<1u << 14> g_mappings;  // mapped address -> bytes, handle
DeviceTableStorage<1u << 6> g_pools;      // pool -> device; bytes = reserved size counted

std::atomic<std::uint32_t> g_sources{0};
std::atomic<bool> g_full_said{false};

void count(DeviceKind kind, int device, std::int64_t bytes) noexcept {
  switch (kind) {
    case DeviceKind::device:
      counters_device_add(device, bytes);
      break;
    case DeviceKind::managed:
      counters_managed_add(bytes);
      break;
    case DeviceKind::pinned:
      counters_pinned_add(bytes);
      break;
    case DeviceKind::pooled:
      break;  // counted at the pool
  }
}

void note_source(DeviceSource source) noexcept {
  if ((g_sources.load(std::memory_order_relaxed) & source) == 0)
    g_sources.fetch_or(source, std::memory_order_relaxed);
}

void table_full() noexcept {
  if (!g_full_said.exchange(true))
    log_line("the device allocation table is full; further device allocations are not counted");
}

DeviceRecord record_of(DeviceKind kind, int device, std::int64_t bytes, std::uint64_t link) {
  return DeviceRecord{bytes, link, device, static_cast<std::uint8_t>(kind)};
}

// A handle's memory is gone once it is released and no mapping is left.
void vmm_drop(std::uint64_t handle) noexcept {
  DeviceRecord r{};
  if (g_handles.table.remove(handle, r)) count(static_cast<DeviceKind>(r.kind), r.device, -r.bytes);
}

}  // namespace

void device_note_alloc(std::uint64_t ptr, DeviceKind kind, int device, std::int64_t bytes,
                       DeviceSource source) noexcept {
  if (ptr == 0 || bytes <= 0) return;
  if (g_allocations.table.find(ptr) != nullptr) return;  // another source recorded it
  if (!g_allocations.table.insert(ptr, record_of(kind, device, bytes, 0))) return table_full();
  note_source(source);
  count(kind, device, bytes);
}

bool device_note_free(std::uint64_t ptr, DeviceAllocation& taken) noexcept {
  DeviceRecord r{};
  if (ptr == 0 || !g_allocations.table.remove(ptr, r)) return false;
  taken = DeviceAllocation{r.bytes, r.device, static_cast<DeviceKind>(r.kind)};
  count(taken.kind, taken.device, -taken.bytes);
  return true;
}

void device_undo_free(std::uint64_t ptr, const DeviceAllocation& taken) noexcept {
  if (!g_allocations.table.insert(ptr, record_of(taken.kind, taken.device, taken.bytes, 0)))
    return table_full();
  count(taken.kind, taken.device, taken.bytes);
}

void device_note_async_alloc(std::uint64_t ptr, int device, std::int64_t bytes, bool pool_known,
                             std::uint64_t pool, std::int64_t reserved_bytes,
                             DeviceSource source) noexcept {
  if (!pool_known) return device_note_alloc(ptr, DeviceKind::device, device, bytes, source);
  device_note_alloc(ptr, DeviceKind::pooled, device, bytes, source);
  device_note_pool(pool, device, reserved_bytes, source);
}

void device_note_pool(std::uint64_t pool, int device, std::int64_t reserved_bytes,
                      DeviceSource source) noexcept {
  DeviceTable::Slot* s = g_pools.table.find(pool);
  if (s == nullptr) {
    // A pool is recorded once and never removed: pools live as long as their device.
    g_pools.table.insert(pool, record_of(DeviceKind::device, device, 0, 0));
    if ((s = g_pools.table.find(pool)) == nullptr) return table_full();
  }
  note_source(source);
  const std::int64_t before = s->bytes.exchange(reserved_bytes, std::memory_order_relaxed);
  counters_device_add(s->device.load(std::memory_order_relaxed), reserved_bytes - before);
}

void device_vmm_create(std::uint64_t handle, DeviceKind kind, int device, std::int64_t bytes,
                       DeviceSource source) noexcept {
  if (bytes <= 0) return;
  if (!g_handles.table.insert(handle, record_of(kind, device, bytes, 0))) return table_full();
  note_source(source);
  count(kind, device, bytes);
}

void device_vmm_map(std::uint64_t address, std::int64_t bytes, std::uint64_t handle) noexcept {
  DeviceTable::Slot* h = g_handles.table.find(handle);
  if (h == nullptr) return;  // created before memwatch saw it: never counted
  if (!g_mappings.table.insert(address, record_of(DeviceKind::device, 0, bytes, handle)))
    return table_full();
  h->state.fetch_add(2, std::memory_order_acq_rel);
}

void device_vmm_unmap(std::uint64_t address, std::int64_t bytes) noexcept {
  // Mappings are found by their start; where none starts, the next one can start no sooner
  // than one granule on (2 MiB, the smallest VMM granularity of NVIDIA's GPUs). The walk is
  // bounded for ranges too large to be made of mappings memwatch saw.
  constexpr std::uint64_t kGranule = 2u << 20;
  constexpr int kMaxSteps = 1 << 16;
  const std::uint64_t end = address + static_cast<std::uint64_t>(bytes);
  for (int step = 0; address < end && step < kMaxSteps; ++step) {
    DeviceRecord m{};
    if (!g_mappings.table.remove(address, m) || m.bytes <= 0) {
      address += kGranule;
      continue;
    }
    if (DeviceTable::Slot* h = g_handles.table.find(m.link)) {
      // The last mapping of a released handle frees its memory.
      if (h->state.fetch_sub(2, std::memory_order_acq_rel) == 3) vmm_drop(m.link);
    }
    address += static_cast<std::uint64_t>(m.bytes);
  }
}

void device_vmm_release(std::uint64_t handle) noexcept {
  DeviceTable::Slot* h = g_handles.table.find(handle);
  if (h == nullptr) return;
  if (h->state.fetch_add(1, std::memory_order_acq_rel) == 0) vmm_drop(handle);
}

std::uint32_t device_sources() noexcept {
  return g_sources.load(std::memory_order_relaxed);
}

void device_count_reset_for_test() noexcept {
  g_allocations.table.clear();
  g_handles.table.clear();
  g_mappings.table.clear();
  g_pools.table.clear();
  g_sources.store(0, std::memory_order_relaxed);
}

}  // namespace memwatch::shim
