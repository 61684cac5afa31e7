// CUPTI as a counting source: synchronous callbacks of the runtime and driver domains, for the
// memory functions only, on the calling thread (exact). libcupti is dlopen'ed by the reporter
// thread once the program itself has brought CUDA (never before, never linked); where it is
// absent or another subscriber holds it, the hooks go on counting.
//
// Handing over: CUPTI and the hooks record into the same pointer table, so an allocation seen
// by both is counted by whichever records it first, and its free by whichever takes it out
// first. From the moment CUPTI counts, the hooks record no new allocation.
#include "device/device_cupti.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "device/device_hooks.hpp"
#include "device/device_routes.hpp"
#include "optional_library.hpp"

namespace memwatch::shim {

namespace {

struct CuptiApi {
  decltype(&cuptiSubscribe) subscribe;
  decltype(&cuptiUnsubscribe) unsubscribe;
  decltype(&cuptiEnableCallback) enable_callback;
  decltype(&cuptiGetDeviceId) get_device_id;
  decltype(&cuptiGetResultString) result_string;
};

CuptiApi g_api{};
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<int> g_state{0};  // 0 not tried, 1 trying, 2 counting, 3 not available

// Runtime calls in progress on this thread: driver callbacks inside them are the runtime's.
constinit thread_local std::uint32_t tls_runtime_depth __attribute__((tls_model("initial-exec"))) =
    0;

constexpr CUpti_CallbackId kRuntimeIds[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
};

constexpr CUpti_CallbackId kDriverIds[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,        CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,         CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,       CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,  CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease,         CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
};

std::uint64_t key(const void* p) {
  return reinterpret_cast<std::uint64_t>(p);
}
std::uint64_t key(CUdeviceptr p) {
  return static_cast<std::uint64_t>(p);
}

int device_of(const CUpti_CallbackData* d) {
  std::uint32_t id = 0;
  if (d->context == nullptr || g_api.get_device_id(d->context, &id) != CUPTI_SUCCESS) return 0;
  return static_cast<int>(id);
}

// A free's record travels from its enter callback to its exit callback in correlationData:
// bytes in the low 48 bits, the kind above, bit 63 set when something was taken.
std::uint64_t pack(const DeviceAllocation& a) {
  return (std::uint64_t{1} << 63) | (static_cast<std::uint64_t>(a.kind) << 56) |
         (static_cast<std::uint64_t>(a.device & 0xff) << 48) |
         (static_cast<std::uint64_t>(a.bytes) & ((std::uint64_t{1} << 48) - 1));
}

DeviceAllocation unpack(std::uint64_t v) {
  return DeviceAllocation{static_cast<std::int64_t>(v & ((std::uint64_t{1} << 48) - 1)),
                          static_cast<std::int32_t>((v >> 48) & 0xff),
                          static_cast<DeviceKind>((v >> 56) & 0x7f)};
}

void free_enter(const CUpti_CallbackData* d, std::uint64_t ptr) {
  DeviceAllocation taken{};
  *d->correlationData = device_note_free(ptr, taken) ? pack(taken) : 0;
}

// After a free: puts the record back if the free failed; re-reads a pool it came from.
void free_exit(const CUpti_CallbackData* d, std::uint64_t ptr, bool failed) {
  const std::uint64_t packed = *d->correlationData;
  if ((packed >> 63) == 0) return;
  const DeviceAllocation taken = unpack(packed);
  if (failed) return device_undo_free(ptr, taken);
  std::uint64_t pool = 0;
  std::int64_t reserved = 0;
  if (taken.kind == DeviceKind::pooled && device_pool_reserved(taken.device, pool, reserved))
    device_note_pool(pool, taken.device, reserved, kSourceCupti);
}

void alloc_exit(std::uint64_t ptr, DeviceKind kind, int device, std::size_t bytes) {
  device_note_alloc(ptr, kind, device, static_cast<std::int64_t>(bytes), kSourceCupti);
}

void alloc_exit(CudaAlloc call, std::uint64_t ptr, const CUpti_CallbackData* d, std::size_t bytes) {
  route_note_alloc(
      call, ptr, bytes, [d] { return device_of(d); }, kSourceCupti);
}

void async_exit(std::uint64_t ptr, int device, std::size_t bytes) {
  std::uint64_t pool = 0;
  std::int64_t reserved = 0;
  if (device_pool_reserved(device, pool, reserved)) {
    alloc_exit(ptr, DeviceKind::pooled, device, bytes);
    device_note_pool(pool, device, reserved, kSourceCupti);
  } else {
    alloc_exit(ptr, DeviceKind::device, device, bytes);
  }
}

template <typename Params>
const Params& params(const CUpti_CallbackData* d) {
  return *static_cast<const Params*>(d->functionParams);
}

void on_runtime(CUpti_CallbackId id, const CUpti_CallbackData* d) {
  const bool enter = d->callbackSite == CUPTI_API_ENTER;
  if (enter)
    ++tls_runtime_depth;
  else
    --tls_runtime_depth;
  // Only the program's own call counts (a runtime call inside another is the runtime's).
  if (tls_runtime_depth != (enter ? 1u : 0u)) return;
  const auto* ret = static_cast<const cudaError_t*>(d->functionReturnValue);
  const bool ok = !enter && ret != nullptr && *ret == cudaSuccess;
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      const auto& p = params<cudaMalloc_v3020_params>(d);
      if (ok) alloc_exit(CudaAlloc::cuda_malloc, key(*p.devPtr), d, p.size);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
      const auto& p = params<cudaMallocPitch_v3020_params>(d);
      if (ok)
        alloc_exit(CudaAlloc::cuda_malloc_pitch, key(*p.devPtr), d,
                   route_pitched_bytes(*p.pitch, p.height));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020: {
      const auto& p = params<cudaMalloc3D_v3020_params>(d);
      if (ok)
        alloc_exit(CudaAlloc::cuda_malloc_3d, key(p.pitchedDevPtr->ptr), d,
                   route_pitched_bytes(p.pitchedDevPtr->pitch, p.extent.height, p.extent.depth));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      const auto& p = params<cudaMallocManaged_v6000_params>(d);
      if (ok) alloc_exit(CudaAlloc::cuda_malloc_managed, key(*p.devPtr), d, p.size);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
      const auto& p = params<cudaMallocHost_v3020_params>(d);
      if (ok) alloc_exit(CudaAlloc::cuda_malloc_host, key(*p.ptr), d, p.size);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
      const auto& p = params<cudaHostAlloc_v3020_params>(d);
      if (ok) alloc_exit(CudaAlloc::cuda_host_alloc, key(*p.pHost), d, p.size);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
      const auto& p = params<cudaMallocAsync_v11020_params>(d);
      if (ok) async_exit(key(*p.devPtr), device_of(d), p.size);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: {
      const void* ptr = params<cudaFree_v3020_params>(d).devPtr;
      enter ? free_enter(d, key(ptr)) : free_exit(d, key(ptr), !ok);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020: {
      const void* ptr = params<cudaFreeHost_v3020_params>(d).ptr;
      enter ? free_enter(d, key(ptr)) : free_exit(d, key(ptr), !ok);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020: {
      const void* ptr = params<cudaFreeAsync_v11020_params>(d).devPtr;
      enter ? free_enter(d, key(ptr)) : free_exit(d, key(ptr), !ok);
      break;
    }
    default:
      break;
  }
}

void on_driver(CUpti_CallbackId id, const CUpti_CallbackData* d) {
  if (tls_runtime_depth != 0) return;
  const bool enter = d->callbackSite == CUPTI_API_ENTER;
  const auto* ret = static_cast<const CUresult*>(d->functionReturnValue);
  const bool ok = !enter && ret != nullptr && *ret == CUDA_SUCCESS;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& p = params<cuMemAlloc_v2_params>(d);
      if (ok) alloc_exit(CudaAlloc::cu_mem_alloc, key(*p.dptr), d, p.bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& p = params<cuMemAllocPitch_v2_params>(d);
      if (ok)
        alloc_exit(CudaAlloc::cu_mem_alloc_pitch, key(*p.dptr), d,
                   route_pitched_bytes(*p.pPitch, p.Height));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& p = params<cuMemAllocManaged_params>(d);
      if (ok) alloc_exit(CudaAlloc::cu_mem_alloc_managed, key(*p.dptr), d, p.bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      const auto& p = params<cuMemAllocHost_v2_params>(d);
      if (ok) alloc_exit(CudaAlloc::cu_mem_alloc_host, key(*p.pp), d, p.bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      const auto& p = params<cuMemHostAlloc_params>(d);
      if (ok) alloc_exit(CudaAlloc::cu_mem_host_alloc, key(*p.pp), d, p.bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto& p = params<cuMemAllocAsync_params>(d);
      if (ok) async_exit(key(*p.dptr), device_of(d), p.bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: {
      const CUdeviceptr ptr = params<cuMemFree_v2_params>(d).dptr;
      enter ? free_enter(d, key(ptr)) : free_exit(d, key(ptr), !ok);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost: {
      const void* ptr = params<cuMemFreeHost_params>(d).p;
      enter ? free_enter(d, key(ptr)) : free_exit(d, key(ptr), !ok);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      const CUdeviceptr ptr = params<cuMemFreeAsync_params>(d).dptr;
      enter ? free_enter(d, key(ptr)) : free_exit(d, key(ptr), !ok);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      const auto& p = params<cuMemCreate_params>(d);
      if (ok && p.prop != nullptr) route_note_vmm_create(*p.handle, *p.prop, p.size, kSourceCupti);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto& p = params<cuMemMap_params>(d);
      if (ok) device_vmm_map(key(p.ptr), static_cast<std::int64_t>(p.size), p.handle);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto& p = params<cuMemUnmap_params>(d);
      if (ok) device_vmm_unmap(key(p.ptr), static_cast<std::int64_t>(p.size));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease: {
      if (ok) device_vmm_release(params<cuMemRelease_params>(d).handle);
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (d == nullptr || d->functionParams == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    on_runtime(id, d);
  else if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    on_driver(id, d);
}

// CUPTI's names start with "cu": the shim's own dlsym would take them for CUDA's.
void* lookup_unwrapped(void* handle, const char* name) noexcept {
  return device_real_dlsym(handle, name);
}

const char* result_text(CUptiResult r) {
  const char* text = nullptr;
  if (g_api.result_string == nullptr || g_api.result_string(r, &text) != CUPTI_SUCCESS ||
      text == nullptr)
    return "unknown error";
  return text;
}

bool enable_all() {
  for (CUpti_CallbackId id : kRuntimeIds)
    if (g_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id) != CUPTI_SUCCESS)
      return false;
  for (CUpti_CallbackId id : kDriverIds)
    if (g_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id) != CUPTI_SUCCESS)
      return false;
  return true;
}

}  // namespace

void device_cupti_start(const char* setting) noexcept {
  int expected = 0;
  if (!g_state.compare_exchange_strong(expected, 1)) return;
  if (setting != nullptr && std::strcmp(setting, "off") == 0) return g_state.store(3);
  const bool named = setting != nullptr && setting[0] != '\0' && std::strcmp(setting, "auto") != 0;
  void* handle = nullptr;
  handle = named ? optional_library_open({setting})
                 : optional_library_open({"libcupti.so.13", "libcupti.so"});
  if (handle == nullptr) {
    // No CUPTI is no failure: the hooks count. A path the user named is worth a line.
    if (named) log_line("MEMWATCH_CUPTI=%s cannot be loaded; counting with the hooks", setting);
    return g_state.store(3);
  }
  if (!optional_library_bind(handle, lookup_unwrapped,
                             std::pair{"cuptiSubscribe", &g_api.subscribe},
                             std::pair{"cuptiUnsubscribe", &g_api.unsubscribe},
                             std::pair{"cuptiEnableCallback", &g_api.enable_callback},
                             std::pair{"cuptiGetDeviceId", &g_api.get_device_id})) {
    log_line("the CUPTI library found lacks the callback API; counting with the hooks");
    return g_state.store(3);
  }
  optional_library_bind(handle, lookup_unwrapped,  // optional: errors by number without it
                        std::pair{"cuptiGetResultString", &g_api.result_string});
  const CUptiResult r = g_api.subscribe(&g_subscriber, on_callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    log_line("CUPTI cannot be used (%s); counting with the hooks", result_text(r));
    return g_state.store(3);
  }
  if (!enable_all()) {
    g_api.unsubscribe(g_subscriber);
    log_line("CUPTI refused the memory callbacks; counting with the hooks");
    return g_state.store(3);
  }
  device_set_cupti_counting(true);
  g_state.store(2);
}

bool device_cupti_counting() noexcept {
  return g_state.load() == 2;
}

}  // namespace memwatch::shim
