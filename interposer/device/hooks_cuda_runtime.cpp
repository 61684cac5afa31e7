// The runtime API's memory functions (a shared libcudart, as PyTorch links it), and the
// runtime's doors to the driver (cudaGetDriverEntryPoint*). The runtime implements its calls
// with driver calls fetched through cuGetProcAddress, which come back wrapped: the runtime hook
// opens a HookScope, so those inner driver calls are not counted a second time.
// cudaGetDriverEntryPoint is deprecated, not gone: programs built against CUDA 12 still call it.
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>

#include "device/device_hooks.hpp"
#include "device/device_routes.hpp"

using namespace memwatch::shim;

namespace {

// The runtime's queries: from the libcudart next after the shim, or the handle it was
// dlopen'ed under.
std::atomic<decltype(&cudaGetDevice)> g_get_device{nullptr};
std::atomic<decltype(&cudaDeviceGetMemPool)> g_device_get_mem_pool{nullptr};
std::atomic<decltype(&cudaMemPoolGetAttribute)> g_pool_get_attribute{nullptr};
std::atomic<bool> g_next_queries_done{false};

void ensure_queries() noexcept {
  look_up_once(g_next_queries_done, [] { device_runtime_queries_from(RTLD_NEXT); });
}

int current_device() noexcept {
  ensure_queries();
  int device = 0;
  auto fn = g_get_device.load(std::memory_order_acquire);
  if (fn == nullptr || fn(&device) != cudaSuccess) return 0;
  return device;
}

bool current_pool(int device, cudaMemPool_t& pool, std::int64_t& reserved) noexcept {
  ensure_queries();
  auto get_pool = g_device_get_mem_pool.load(std::memory_order_acquire);
  auto get_attribute = g_pool_get_attribute.load(std::memory_order_acquire);
  unsigned long long value = 0;
  if (get_pool == nullptr || get_attribute == nullptr || get_pool(&pool, device) != cudaSuccess ||
      get_attribute(pool, cudaMemPoolAttrReservedMemCurrent, &value) != cudaSuccess)
    return false;
  reserved = static_cast<std::int64_t>(value);
  return true;
}

std::uint64_t as_key(const void* p) {
  return reinterpret_cast<std::uint64_t>(p);
}

void note(const HookScope& scope, cudaError_t r, CudaAlloc call, void* p, std::size_t bytes) {
  if (r != cudaSuccess || !scope.count) return;
  route_note_alloc(call, as_key(p), bytes, current_device, kSourceRuntime);
}

// ---- implementations ---------------------------------------------------------------------

cudaError_t malloc_impl(decltype(&cudaMalloc) real, void** p, std::size_t bytes) {
  const HookScope scope;
  const cudaError_t r = real(p, bytes);
  if (p != nullptr) note(scope, r, CudaAlloc::cuda_malloc, *p, bytes);
  return r;
}

cudaError_t malloc_managed(decltype(&cudaMallocManaged) real, void** p, std::size_t bytes,
                           unsigned flags) {
  const HookScope scope;
  const cudaError_t r = real(p, bytes, flags);
  if (p != nullptr) note(scope, r, CudaAlloc::cuda_malloc_managed, *p, bytes);
  return r;
}

cudaError_t malloc_pitch(decltype(&cudaMallocPitch) real, void** p, std::size_t* pitch,
                         std::size_t width, std::size_t height) {
  const HookScope scope;
  const cudaError_t r = real(p, pitch, width, height);
  if (p != nullptr && pitch != nullptr)
    note(scope, r, CudaAlloc::cuda_malloc_pitch, *p, route_pitched_bytes(*pitch, height));
  return r;
}

cudaError_t malloc_3d(decltype(&cudaMalloc3D) real, cudaPitchedPtr* pitched, cudaExtent extent) {
  const HookScope scope;
  const cudaError_t r = real(pitched, extent);
  if (pitched != nullptr)
    note(scope, r, CudaAlloc::cuda_malloc_3d, pitched->ptr,
         route_pitched_bytes(pitched->pitch, extent.height, extent.depth));
  return r;
}

cudaError_t malloc_host(decltype(&cudaMallocHost) real, void** p, std::size_t bytes) {
  const HookScope scope;
  const cudaError_t r = real(p, bytes);
  if (p != nullptr) note(scope, r, CudaAlloc::cuda_malloc_host, *p, bytes);
  return r;
}

cudaError_t host_alloc(decltype(&cudaHostAlloc) real, void** p, std::size_t bytes, unsigned flags) {
  const HookScope scope;
  const cudaError_t r = real(p, bytes, flags);
  if (p != nullptr) note(scope, r, CudaAlloc::cuda_host_alloc, *p, bytes);
  return r;
}

template <typename Fn, typename... Args>
cudaError_t free_impl(Fn real, void* p, Args... rest) {
  const HookScope scope;
  DeviceAllocation taken{};
  const bool counted = scope.count && device_note_free(as_key(p), taken);
  const cudaError_t r = real(p, rest...);
  if (r != cudaSuccess && counted) device_undo_free(as_key(p), taken);
  return r;
}

cudaError_t free_device(decltype(&cudaFree) real, void* p) {
  return free_impl(real, p);
}
cudaError_t free_host(decltype(&cudaFreeHost) real, void* p) {
  return free_impl(real, p);
}

cudaError_t malloc_async(decltype(&cudaMallocAsync) real, void** p, std::size_t bytes,
                         cudaStream_t stream) {
  const HookScope scope;
  const cudaError_t r = real(p, bytes, stream);
  if (r != cudaSuccess || p == nullptr || !scope.count) return r;
  const int device = current_device();
  cudaMemPool_t pool{};
  std::int64_t reserved = 0;
  const bool pool_known = current_pool(device, pool, reserved);
  device_note_async_alloc(as_key(*p), device, static_cast<std::int64_t>(bytes), pool_known,
                          as_key(pool), reserved, kSourceRuntime);
  return r;
}

cudaError_t free_async(decltype(&cudaFreeAsync) real, void* p, cudaStream_t stream) {
  const HookScope scope;
  DeviceAllocation taken{};
  const bool counted = scope.count && device_note_free(as_key(p), taken);
  const cudaError_t r = real(p, stream);
  if (r != cudaSuccess && counted) {
    device_undo_free(as_key(p), taken);
  } else if (counted && taken.kind == DeviceKind::pooled) {
    cudaMemPool_t pool{};
    std::int64_t reserved = 0;
    if (current_pool(taken.device, pool, reserved))
      device_note_pool(as_key(pool), taken.device, reserved, kSourceRuntime);
  }
  return r;
}

// cudaGetDriverEntryPoint answers for the runtime's own CUDA version (12.0 or later: it has
// the status argument), so the current version of each driver function comes back.
constexpr int kLatestDriverVersion = 1000000;

cudaError_t entry_point(decltype(&cudaGetDriverEntryPoint) real, const char* symbol, void** fn,
                        unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  device_note_cuda_seen();
  const cudaError_t r = real(symbol, fn, flags, status);
  if (r == cudaSuccess && symbol != nullptr && fn != nullptr && *fn != nullptr)
    *fn = device_wrap_driver(symbol, kLatestDriverVersion, *fn);
  return r;
}

cudaError_t entry_point_by_version(decltype(&cudaGetDriverEntryPointByVersion) real,
                                   const char* symbol, void** fn, unsigned version,
                                   unsigned long long flags,
                                   cudaDriverEntryPointQueryResult* status) {
  device_note_cuda_seen();
  const cudaError_t r = real(symbol, fn, version, flags, status);
  if (r == cudaSuccess && symbol != nullptr && fn != nullptr && *fn != nullptr)
    *fn = device_wrap_driver(symbol, static_cast<int>(version), *fn);
  return r;
}

using Malloc = Family<malloc_impl, decltype(&cudaMalloc)>;
using MallocManaged = Family<malloc_managed, decltype(&cudaMallocManaged)>;
using MallocPitch = Family<malloc_pitch, decltype(&cudaMallocPitch)>;
using Malloc3D = Family<malloc_3d, decltype(&cudaMalloc3D)>;
using MallocHost = Family<malloc_host, decltype(&cudaMallocHost)>;
using HostAlloc = Family<host_alloc, decltype(&cudaHostAlloc)>;
using Free = Family<free_device, decltype(&cudaFree)>;
using FreeHost = Family<free_host, decltype(&cudaFreeHost)>;
using MallocAsync = Family<malloc_async, decltype(&cudaMallocAsync)>;
using FreeAsync = Family<free_async, decltype(&cudaFreeAsync)>;
using EntryPoint = Family<entry_point, decltype(&cudaGetDriverEntryPoint)>;
using EntryPointByVersion =
    Family<entry_point_by_version, decltype(&cudaGetDriverEntryPointByVersion)>;

template <typename Fn, typename Impl, typename... Args>
cudaError_t call_next(std::atomic<Fn>& slot, const char* name, Impl impl, Args... args) {
  const Fn fn = device_next(slot, name, {"libcudart.so.13", "libcudart.so.12"});
  if (fn == nullptr) return cudaErrorInitializationError;
  return impl(fn, args...);
}

template <typename F>
void* wrap_as(void* real) {
  return reinterpret_cast<void*>(F::wrap(reinterpret_cast<typename F::Fn>(real)));
}

}  // namespace

// ---- the hooks a program linked to a shared libcudart calls ---------------------------------

MEMWATCH_HOOK cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  static std::atomic<Malloc::Fn> real{nullptr};
  return call_next(real, "cudaMalloc", malloc_impl, p, bytes);
}

MEMWATCH_HOOK cudaError_t cudaMallocManaged(void** p, std::size_t bytes, unsigned flags) {
  static std::atomic<MallocManaged::Fn> real{nullptr};
  return call_next(real, "cudaMallocManaged", malloc_managed, p, bytes, flags);
}

MEMWATCH_HOOK cudaError_t cudaMallocPitch(void** p, std::size_t* pitch, std::size_t width,
                                          std::size_t height) {
  static std::atomic<MallocPitch::Fn> real{nullptr};
  return call_next(real, "cudaMallocPitch", malloc_pitch, p, pitch, width, height);
}

MEMWATCH_HOOK cudaError_t cudaMalloc3D(cudaPitchedPtr* pitched, cudaExtent extent) {
  static std::atomic<Malloc3D::Fn> real{nullptr};
  return call_next(real, "cudaMalloc3D", malloc_3d, pitched, extent);
}

MEMWATCH_HOOK cudaError_t cudaMallocHost(void** p, std::size_t bytes) {
  static std::atomic<MallocHost::Fn> real{nullptr};
  return call_next(real, "cudaMallocHost", malloc_host, p, bytes);
}

MEMWATCH_HOOK cudaError_t cudaHostAlloc(void** p, std::size_t bytes, unsigned flags) {
  static std::atomic<HostAlloc::Fn> real{nullptr};
  return call_next(real, "cudaHostAlloc", host_alloc, p, bytes, flags);
}

MEMWATCH_HOOK cudaError_t cudaFree(void* p) {
  static std::atomic<Free::Fn> real{nullptr};
  return call_next(real, "cudaFree", free_device, p);
}

MEMWATCH_HOOK cudaError_t cudaFreeHost(void* p) {
  static std::atomic<FreeHost::Fn> real{nullptr};
  return call_next(real, "cudaFreeHost", free_host, p);
}

MEMWATCH_HOOK cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t stream) {
  static std::atomic<MallocAsync::Fn> real{nullptr};
  return call_next(real, "cudaMallocAsync", malloc_async, p, bytes, stream);
}

MEMWATCH_HOOK cudaError_t cudaMallocAsync_ptsz(void** p, std::size_t bytes, cudaStream_t stream) {
  static std::atomic<MallocAsync::Fn> real{nullptr};
  return call_next(real, "cudaMallocAsync_ptsz", malloc_async, p, bytes, stream);
}

MEMWATCH_HOOK cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  static std::atomic<FreeAsync::Fn> real{nullptr};
  return call_next(real, "cudaFreeAsync", free_async, p, stream);
}

MEMWATCH_HOOK cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t stream) {
  static std::atomic<FreeAsync::Fn> real{nullptr};
  return call_next(real, "cudaFreeAsync_ptsz", free_async, p, stream);
}

MEMWATCH_HOOK cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn,
                                                  unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* status) {
  static std::atomic<EntryPoint::Fn> real{nullptr};
  return call_next(real, "cudaGetDriverEntryPoint", entry_point, symbol, fn, flags, status);
}

MEMWATCH_HOOK cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn,
                                                       unsigned long long flags,
                                                       cudaDriverEntryPointQueryResult* status) {
  static std::atomic<EntryPoint::Fn> real{nullptr};
  return call_next(real, "cudaGetDriverEntryPoint_ptsz", entry_point, symbol, fn, flags, status);
}

MEMWATCH_HOOK cudaError_t cudaGetDriverEntryPointByVersion(
    const char* symbol, void** fn, unsigned version, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  static std::atomic<EntryPointByVersion::Fn> real{nullptr};
  return call_next(real, "cudaGetDriverEntryPointByVersion", entry_point_by_version, symbol, fn,
                   version, flags, status);
}

MEMWATCH_HOOK cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** fn, unsigned version, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  static std::atomic<EntryPointByVersion::Fn> real{nullptr};
  return call_next(real, "cudaGetDriverEntryPointByVersion_ptsz", entry_point_by_version, symbol,
                   fn, version, flags, status);
}

namespace memwatch::shim {

void* device_wrap_exported(void* handle, const char* name, void* real) noexcept {
  if (std::strncmp(name, "cuda", 4) != 0) return device_wrap_driver_exported(handle, name, real);
  struct Entry {
    const char* name;
    void* (*wrap)(void*);
  };
  static constexpr Entry kExported[] = {
      {"cudaMalloc", wrap_as<Malloc>},
      {"cudaMallocManaged", wrap_as<MallocManaged>},
      {"cudaMallocPitch", wrap_as<MallocPitch>},
      {"cudaMalloc3D", wrap_as<Malloc3D>},
      {"cudaMallocHost", wrap_as<MallocHost>},
      {"cudaHostAlloc", wrap_as<HostAlloc>},
      {"cudaFree", wrap_as<Free>},
      {"cudaFreeHost", wrap_as<FreeHost>},
      {"cudaMallocAsync", wrap_as<MallocAsync>},
      {"cudaMallocAsync_ptsz", wrap_as<MallocAsync>},
      {"cudaFreeAsync", wrap_as<FreeAsync>},
      {"cudaFreeAsync_ptsz", wrap_as<FreeAsync>},
      {"cudaGetDriverEntryPoint", wrap_as<EntryPoint>},
      {"cudaGetDriverEntryPoint_ptsz", wrap_as<EntryPoint>},
      {"cudaGetDriverEntryPointByVersion", wrap_as<EntryPointByVersion>},
      {"cudaGetDriverEntryPointByVersion_ptsz", wrap_as<EntryPointByVersion>},
  };
  for (const Entry& e : kExported) {
    if (std::strcmp(name, e.name) != 0) continue;
    device_note_cuda_seen();
    if (handle != RTLD_DEFAULT && g_get_device.load(std::memory_order_acquire) == nullptr)
      device_runtime_queries_from(handle);
    return e.wrap(real);
  }
  return real;
}

void device_runtime_queries_from(void* handle) noexcept {
  InternalScope internal;
  set_once(g_get_device, device_real_dlsym(handle, "cudaGetDevice"));
  set_once(g_device_get_mem_pool, device_real_dlsym(handle, "cudaDeviceGetMemPool"));
  set_once(g_pool_get_attribute, device_real_dlsym(handle, "cudaMemPoolGetAttribute"));
}

}  // namespace memwatch::shim
