// How each CUDA API allocates, written once for the two ways memwatch sees a call: the hooks
// (hooks_cuda_runtime.cpp, hooks_cuda_driver.cpp) read it from the call's arguments, CUPTI
// (device_cupti.cpp) from its parameter struct. Which memory a call takes, how many bytes a
// pitched block holds, and on which device each is counted are decided here and nowhere else.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "device/device_count.hpp"

namespace memwatch::shim {

// The calls that make one block of the pointer table (the stream-ordered pools and VMM have
// routes of their own: device_note_async_alloc and route_note_vmm_create).
enum class CudaAlloc : std::uint8_t {
  cuda_malloc,
  cuda_malloc_managed,
  cuda_malloc_pitch,
  cuda_malloc_3d,
  cuda_malloc_host,
  cuda_host_alloc,
  cu_mem_alloc,
  cu_mem_alloc_pitch,
  cu_mem_alloc_managed,
  cu_mem_alloc_host,
  cu_mem_host_alloc,
};

constexpr DeviceKind route_kind(CudaAlloc call) {
  switch (call) {
    case CudaAlloc::cuda_malloc_managed:
    case CudaAlloc::cu_mem_alloc_managed:
      return DeviceKind::managed;
    case CudaAlloc::cuda_malloc_host:
    case CudaAlloc::cuda_host_alloc:
    case CudaAlloc::cu_mem_alloc_host:
    case CudaAlloc::cu_mem_host_alloc:
      return DeviceKind::pinned;
    default:
      return DeviceKind::device;
  }
}

// A pitched block holds the row pitch the call chose, times its rows, times its slices.
constexpr std::size_t route_pitched_bytes(std::size_t pitch, std::size_t height,
                                          std::size_t depth = 1) {
  return pitch * height * depth;
}

// Records a successful allocation by `call`. Pinned host memory belongs to no device and is
// kept under device 0; the rest under the device the call ran on, asked for only then.
template <typename CurrentDevice>
void route_note_alloc(CudaAlloc call, std::uint64_t key, std::size_t bytes,
                      CurrentDevice current_device, DeviceSource source) noexcept {
  const DeviceKind kind = route_kind(call);
  device_note_alloc(key, kind, kind == DeviceKind::pinned ? 0 : current_device(),
                    static_cast<std::int64_t>(bytes), source);
}

// A VMM handle's physical memory, counted at cuMemCreate: a device's, or pinned host memory.
inline void route_note_vmm_create(CUmemGenericAllocationHandle handle,
                                  const CUmemAllocationProp& prop, std::size_t bytes,
                                  DeviceSource source) noexcept {
  const bool on_device = prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  device_vmm_create(handle, on_device ? DeviceKind::device : DeviceKind::pinned,
                    on_device ? prop.location.id : 0, static_cast<std::int64_t>(bytes), source);
}

}  // namespace memwatch::shim
