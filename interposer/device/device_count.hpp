// Device-memory accounting shared by every source that sees CUDA allocations (runtime hooks,
// driver hooks, CUPTI callbacks). It knows nothing of CUDA's headers: sources translate their
// calls into these notes. Every allocation is remembered by pointer (cudaFree gives only the
// pointer), so an allocation is counted by whoever records it first and uncounted by whoever
// takes it out first: two sources that see the same allocation count it once.
#pragma once

#include <cstdint>

namespace memwatch::shim {

enum class DeviceKind : std::uint8_t {
  device,   // device memory, counted per device
  managed,  // unified memory: its own peak
  pinned,   // page-locked host memory: its own peak, not device memory
  pooled,   // from a stream-ordered pool whose growth is counted at the pool instead
};

// Which sources counted something (the report's "sources").
enum DeviceSource : std::uint32_t {
  kSourceCupti = 1u << 0,
  kSourceRuntime = 1u << 1,
  kSourceDriver = 1u << 2,
};

struct DeviceAllocation {
  std::int64_t bytes;
  std::int32_t device;
  DeviceKind kind;
};

// An allocation that succeeded. Not counted when the pointer is already recorded (another
// source saw it first) or when the table is full (said once on stderr).
void device_note_alloc(std::uint64_t ptr, DeviceKind kind, int device, std::int64_t bytes,
                       DeviceSource source) noexcept;
// Before the real free: takes the pointer out and uncounts it, so that the address cannot be
// handed out again and recorded in between. False when the pointer was not recorded.
bool device_note_free(std::uint64_t ptr, DeviceAllocation& taken) noexcept;
// The real free failed: the allocation is live again.
void device_undo_free(std::uint64_t ptr, const DeviceAllocation& taken) noexcept;

// A stream-ordered pool's physical size now (its reserved-memory attribute): the device count
// moves by the change since the pool was last read.
void device_note_pool(std::uint64_t pool, int device, std::int64_t reserved_bytes,
                      DeviceSource source) noexcept;

// A stream-ordered allocation: where its pool told its reserved size (`pool_known`), the pool's
// growth is the device memory and the block is only remembered so that its free is recognised;
// otherwise the block itself is the device memory.
void device_note_async_alloc(std::uint64_t ptr, int device, std::int64_t bytes, bool pool_known,
                             std::uint64_t pool, std::int64_t reserved_bytes,
                             DeviceSource source) noexcept;

// The virtual-memory API: physical memory exists from create until it is both released and
// unmapped everywhere; address reservations are not memory.
void device_vmm_create(std::uint64_t handle, DeviceKind kind, int device, std::int64_t bytes,
                       DeviceSource source) noexcept;
void device_vmm_map(std::uint64_t address, std::int64_t bytes, std::uint64_t handle) noexcept;
// Unmaps every mapping that starts inside [address, address + bytes).
void device_vmm_unmap(std::uint64_t address, std::int64_t bytes) noexcept;
void device_vmm_release(std::uint64_t handle) noexcept;

std::uint32_t device_sources() noexcept;

// Per-thread nesting of API calls: a driver call made by the runtime inside cudaMalloc is the
// runtime's, not the program's. Sources count only at depth 0.
struct DeviceDepth {
  std::uint32_t depth;
};
extern constinit thread_local DeviceDepth tls_device_depth
    __attribute__((tls_model("initial-exec")));

class DeviceCallScope {
 public:
  DeviceCallScope() noexcept : outer_(tls_device_depth.depth++ == 0) {}
  ~DeviceCallScope() { --tls_device_depth.depth; }
  DeviceCallScope(const DeviceCallScope&) = delete;
  DeviceCallScope& operator=(const DeviceCallScope&) = delete;
  // This call is the program's own, not one made inside another counted call.
  [[nodiscard]] bool outer() const noexcept { return outer_; }

 private:
  bool outer_;
};

// Forgets every record and source (tests only; counters are the tests' to reset).
void device_count_reset_for_test() noexcept;

}  // namespace memwatch::shim
