// The driver API's memory functions (libcuda), whichever way the program reaches them: linked
// directly (these exported hooks), through dlopen + dlsym (hooks_dlsym.cpp), or through
// cuGetProcAddress / cudaGetDriverEntryPoint* (wrappers made here). Each implementation takes
// the real function first; a call made inside another counted call (the runtime's own driver
// calls inside cudaMalloc) is passed through uncounted.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "device/device_hooks.hpp"
#include "device/device_routes.hpp"

// cuda.h maps these names to their current versions; the shim exports the old names too.
#undef cuGetProcAddress

using namespace memwatch::shim;

namespace {

using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);

// The driver's query functions, from wherever the program's libcuda was first seen.
std::atomic<CUresult (*)(CUdevice*)> g_ctx_get_device{nullptr};
std::atomic<CUresult (*)(CUmemoryPool*, CUdevice)> g_device_get_mem_pool{nullptr};
std::atomic<CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*)> g_pool_get_attribute{nullptr};
std::atomic<CUresult (*)(char*, int, CUdevice)> g_device_get_pci_bus_id{nullptr};
std::atomic<bool> g_next_queries_done{false};

std::atomic<bool> g_cuda_seen{false};
std::atomic<bool> g_cupti_counting{false};

void* lookup_in_handle(void* handle, const char* name) {
  return device_real_dlsym(handle, name);
}

// For the exported hooks: the libcuda the program linked is next after the shim.
void ensure_queries() noexcept {
  look_up_once(g_next_queries_done,
               [] { device_driver_queries_from(lookup_in_handle, RTLD_NEXT); });
}

int current_device() noexcept {
  ensure_queries();
  CUdevice device = 0;
  auto fn = g_ctx_get_device.load(std::memory_order_acquire);
  if (fn == nullptr || fn(&device) != CUDA_SUCCESS) return 0;
  return device;
}

// The reserved size of the device's current pool, the one cuMemAllocAsync draws from.
bool current_pool(int device, CUmemoryPool& pool, std::int64_t& reserved) noexcept {
  ensure_queries();
  auto get_pool = g_device_get_mem_pool.load(std::memory_order_acquire);
  auto get_attribute = g_pool_get_attribute.load(std::memory_order_acquire);
  cuuint64_t value = 0;
  if (get_pool == nullptr || get_attribute == nullptr || get_pool(&pool, device) != CUDA_SUCCESS ||
      get_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value) != CUDA_SUCCESS)
    return false;
  reserved = static_cast<std::int64_t>(value);
  return true;
}

std::uint64_t as_key(CUdeviceptr p) {
  return static_cast<std::uint64_t>(p);
}
std::uint64_t as_key(const void* p) {
  return reinterpret_cast<std::uint64_t>(p);
}

// ---- implementations ---------------------------------------------------------------------

template <typename Key>
void note(const HookScope& scope, CUresult r, CudaAlloc call, const Key* key, std::size_t bytes) {
  if (r == CUDA_SUCCESS && key != nullptr && scope.count)
    route_note_alloc(call, as_key(*key), bytes, current_device, kSourceDriver);
}

CUresult mem_alloc(decltype(&cuMemAlloc_v2) real, CUdeviceptr* dptr, std::size_t bytes) {
  const HookScope scope;
  const CUresult r = real(dptr, bytes);
  note(scope, r, CudaAlloc::cu_mem_alloc, dptr, bytes);
  return r;
}

CUresult mem_alloc_pitch(decltype(&cuMemAllocPitch_v2) real, CUdeviceptr* dptr, std::size_t* pitch,
                         std::size_t width, std::size_t height, unsigned element_bytes) {
  const HookScope scope;
  const CUresult r = real(dptr, pitch, width, height, element_bytes);
  if (pitch != nullptr)
    note(scope, r, CudaAlloc::cu_mem_alloc_pitch, dptr, route_pitched_bytes(*pitch, height));
  return r;
}

CUresult mem_alloc_managed(decltype(&cuMemAllocManaged) real, CUdeviceptr* dptr, std::size_t bytes,
                           unsigned flags) {
  const HookScope scope;
  const CUresult r = real(dptr, bytes, flags);
  note(scope, r, CudaAlloc::cu_mem_alloc_managed, dptr, bytes);
  return r;
}

template <typename Fn, typename... Args>
CUresult free_impl(Fn real, std::uint64_t key, Args... args) {
  const HookScope scope;
  DeviceAllocation taken{};
  const bool counted = scope.count && device_note_free(key, taken);
  const CUresult r = real(args...);
  if (r != CUDA_SUCCESS && counted) device_undo_free(key, taken);
  return r;
}

CUresult mem_free(decltype(&cuMemFree_v2) real, CUdeviceptr p) {
  return free_impl(real, as_key(p), p);
}

CUresult mem_alloc_host(decltype(&cuMemAllocHost_v2) real, void** pp, std::size_t bytes) {
  const HookScope scope;
  const CUresult r = real(pp, bytes);
  note(scope, r, CudaAlloc::cu_mem_alloc_host, pp, bytes);
  return r;
}

CUresult mem_host_alloc(decltype(&cuMemHostAlloc) real, void** pp, std::size_t bytes,
                        unsigned flags) {
  const HookScope scope;
  const CUresult r = real(pp, bytes, flags);
  note(scope, r, CudaAlloc::cu_mem_host_alloc, pp, bytes);
  return r;
}

CUresult mem_free_host(decltype(&cuMemFreeHost) real, void* p) {
  return free_impl(real, as_key(p), p);
}

CUresult mem_alloc_async(decltype(&cuMemAllocAsync) real, CUdeviceptr* dptr, std::size_t bytes,
                         CUstream stream) {
  const HookScope scope;
  const CUresult r = real(dptr, bytes, stream);
  if (r != CUDA_SUCCESS || dptr == nullptr || !scope.count) return r;
  const int device = current_device();
  CUmemoryPool pool{};
  std::int64_t reserved = 0;
  const bool pool_known = current_pool(device, pool, reserved);
  device_note_async_alloc(as_key(*dptr), device, static_cast<std::int64_t>(bytes), pool_known,
                          as_key(pool), reserved, kSourceDriver);
  return r;
}

CUresult mem_free_async(decltype(&cuMemFreeAsync) real, CUdeviceptr p, CUstream stream) {
  const HookScope scope;
  DeviceAllocation taken{};
  const bool counted = scope.count && device_note_free(as_key(p), taken);
  const CUresult r = real(p, stream);
  if (r != CUDA_SUCCESS && counted) {
    device_undo_free(as_key(p), taken);
  } else if (counted && taken.kind == DeviceKind::pooled) {
    CUmemoryPool pool{};
    std::int64_t reserved = 0;
    if (current_pool(taken.device, pool, reserved))
      device_note_pool(as_key(pool), taken.device, reserved, kSourceDriver);
  }
  return r;
}

CUresult mem_create(decltype(&cuMemCreate) real, CUmemGenericAllocationHandle* handle,
                    std::size_t bytes, const CUmemAllocationProp* prop, unsigned long long flags) {
  const HookScope scope;
  const CUresult r = real(handle, bytes, prop, flags);
  if (r == CUDA_SUCCESS && handle != nullptr && prop != nullptr && scope.count)
    route_note_vmm_create(*handle, *prop, bytes, kSourceDriver);
  return r;
}

CUresult mem_map(decltype(&cuMemMap) real, CUdeviceptr address, std::size_t bytes,
                 std::size_t offset, CUmemGenericAllocationHandle handle,
                 unsigned long long flags) {
  const HookScope scope;
  const CUresult r = real(address, bytes, offset, handle, flags);
  if (r == CUDA_SUCCESS && scope.count)
    device_vmm_map(as_key(address), static_cast<std::int64_t>(bytes), handle);
  return r;
}

CUresult mem_unmap(decltype(&cuMemUnmap) real, CUdeviceptr address, std::size_t bytes) {
  const HookScope scope;
  const CUresult r = real(address, bytes);
  if (r == CUDA_SUCCESS && scope.count)
    device_vmm_unmap(as_key(address), static_cast<std::int64_t>(bytes));
  return r;
}

CUresult mem_release(decltype(&cuMemRelease) real, CUmemGenericAllocationHandle handle) {
  const HookScope scope;
  const CUresult r = real(handle);
  if (r == CUDA_SUCCESS && scope.count) device_vmm_release(handle);
  return r;
}

// cuGetProcAddress, before and after CUDA 12 (the _v2 reports what it found).
void remember_get_proc(GetProcV2 real) noexcept;
void remember_get_proc(GetProcV1 real) noexcept;

CUresult get_proc_v2(GetProcV2 real, const char* symbol, void** pfn, int version, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* status) {
  device_note_cuda_seen();
  const CUresult r = real(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr && symbol != nullptr) {
    remember_get_proc(real);
    *pfn = device_wrap_driver(symbol, version, *pfn);
  }
  return r;
}

CUresult get_proc_v1(GetProcV1 real, const char* symbol, void** pfn, int version,
                     cuuint64_t flags) {
  device_note_cuda_seen();
  const CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr && symbol != nullptr) {
    remember_get_proc(real);
    *pfn = device_wrap_driver(symbol, version, *pfn);
  }
  return r;
}

using MemAlloc = Family<mem_alloc, decltype(&cuMemAlloc_v2)>;
using MemAllocPitch = Family<mem_alloc_pitch, decltype(&cuMemAllocPitch_v2)>;
using MemAllocManaged = Family<mem_alloc_managed, decltype(&cuMemAllocManaged)>;
using MemFree = Family<mem_free, decltype(&cuMemFree_v2)>;
using MemAllocHost = Family<mem_alloc_host, decltype(&cuMemAllocHost_v2)>;
using MemHostAlloc = Family<mem_host_alloc, decltype(&cuMemHostAlloc)>;
using MemFreeHost = Family<mem_free_host, decltype(&cuMemFreeHost)>;
using MemAllocAsync = Family<mem_alloc_async, decltype(&cuMemAllocAsync)>;
using MemFreeAsync = Family<mem_free_async, decltype(&cuMemFreeAsync)>;
using MemCreate = Family<mem_create, decltype(&cuMemCreate)>;
using MemMap = Family<mem_map, decltype(&cuMemMap)>;
using MemUnmap = Family<mem_unmap, decltype(&cuMemUnmap)>;
using MemRelease = Family<mem_release, decltype(&cuMemRelease)>;
using GetProcAddressV1 = Family<get_proc_v1, GetProcV1>;
using GetProcAddressV2 = Family<get_proc_v2, GetProcV2>;

// The driver's queries fetched through the real cuGetProcAddress, called directly.
std::atomic<GetProcV2> g_get_proc_v2{nullptr};
std::atomic<GetProcV1> g_get_proc_v1{nullptr};

void* lookup_via_get_proc(void*, const char* name) {
  void* p = nullptr;
  if (auto v2 = g_get_proc_v2.load(std::memory_order_acquire)) {
    CUdriverProcAddressQueryResult status{};
    if (v2(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS) return p;
  } else if (auto v1 = g_get_proc_v1.load(std::memory_order_acquire)) {
    if (v1(name, &p, 11030, CU_GET_PROC_ADDRESS_DEFAULT) == CUDA_SUCCESS) return p;
  }
  return nullptr;
}

void remember_get_proc(GetProcV2 real) noexcept {
  if (g_ctx_get_device.load(std::memory_order_acquire) != nullptr) return;
  g_get_proc_v2.store(real, std::memory_order_release);
  device_driver_queries_from(lookup_via_get_proc, nullptr);
}

void remember_get_proc(GetProcV1 real) noexcept {
  if (g_ctx_get_device.load(std::memory_order_acquire) != nullptr) return;
  g_get_proc_v1.store(real, std::memory_order_release);
  device_driver_queries_from(lookup_via_get_proc, nullptr);
}

template <typename Fn, typename Impl, typename... Args>
CUresult call_next(std::atomic<Fn>& slot, const char* name, Impl impl, Args... args) {
  const Fn fn = device_next(slot, name, {"libcuda.so.1"});
  if (fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return impl(fn, args...);
}

bool same(const char* a, const char* b) {
  return std::strcmp(a, b) == 0;
}

}  // namespace

// ---- the hooks a directly linked program calls -----------------------------------------------

MEMWATCH_HOOK CUresult cuMemAlloc_v2(CUdeviceptr* dptr, std::size_t bytes) {
  static std::atomic<MemAlloc::Fn> real{nullptr};
  return call_next(real, "cuMemAlloc_v2", mem_alloc, dptr, bytes);
}

MEMWATCH_HOOK CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width,
                                          std::size_t height, unsigned element_bytes) {
  static std::atomic<MemAllocPitch::Fn> real{nullptr};
  return call_next(real, "cuMemAllocPitch_v2", mem_alloc_pitch, dptr, pitch, width, height,
                   element_bytes);
}

MEMWATCH_HOOK CUresult cuMemAllocManaged(CUdeviceptr* dptr, std::size_t bytes, unsigned flags) {
  static std::atomic<MemAllocManaged::Fn> real{nullptr};
  return call_next(real, "cuMemAllocManaged", mem_alloc_managed, dptr, bytes, flags);
}

MEMWATCH_HOOK CUresult cuMemFree_v2(CUdeviceptr p) {
  static std::atomic<MemFree::Fn> real{nullptr};
  return call_next(real, "cuMemFree_v2", mem_free, p);
}

MEMWATCH_HOOK CUresult cuMemAllocHost_v2(void** pp, std::size_t bytes) {
  static std::atomic<MemAllocHost::Fn> real{nullptr};
  return call_next(real, "cuMemAllocHost_v2", mem_alloc_host, pp, bytes);
}

MEMWATCH_HOOK CUresult cuMemHostAlloc(void** pp, std::size_t bytes, unsigned flags) {
  static std::atomic<MemHostAlloc::Fn> real{nullptr};
  return call_next(real, "cuMemHostAlloc", mem_host_alloc, pp, bytes, flags);
}

MEMWATCH_HOOK CUresult cuMemFreeHost(void* p) {
  static std::atomic<MemFreeHost::Fn> real{nullptr};
  return call_next(real, "cuMemFreeHost", mem_free_host, p);
}

MEMWATCH_HOOK CUresult cuMemAllocAsync(CUdeviceptr* dptr, std::size_t bytes, CUstream stream) {
  static std::atomic<MemAllocAsync::Fn> real{nullptr};
  return call_next(real, "cuMemAllocAsync", mem_alloc_async, dptr, bytes, stream);
}

MEMWATCH_HOOK CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, std::size_t bytes, CUstream stream) {
  static std::atomic<MemAllocAsync::Fn> real{nullptr};
  return call_next(real, "cuMemAllocAsync_ptsz", mem_alloc_async, dptr, bytes, stream);
}

MEMWATCH_HOOK CUresult cuMemFreeAsync(CUdeviceptr p, CUstream stream) {
  static std::atomic<MemFreeAsync::Fn> real{nullptr};
  return call_next(real, "cuMemFreeAsync", mem_free_async, p, stream);
}

MEMWATCH_HOOK CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream stream) {
  static std::atomic<MemFreeAsync::Fn> real{nullptr};
  return call_next(real, "cuMemFreeAsync_ptsz", mem_free_async, p, stream);
}

MEMWATCH_HOOK CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t bytes,
                                   const CUmemAllocationProp* prop, unsigned long long flags) {
  static std::atomic<MemCreate::Fn> real{nullptr};
  return call_next(real, "cuMemCreate", mem_create, handle, bytes, prop, flags);
}

MEMWATCH_HOOK CUresult cuMemMap(CUdeviceptr address, std::size_t bytes, std::size_t offset,
                                CUmemGenericAllocationHandle handle, unsigned long long flags) {
  static std::atomic<MemMap::Fn> real{nullptr};
  return call_next(real, "cuMemMap", mem_map, address, bytes, offset, handle, flags);
}

MEMWATCH_HOOK CUresult cuMemUnmap(CUdeviceptr address, std::size_t bytes) {
  static std::atomic<MemUnmap::Fn> real{nullptr};
  return call_next(real, "cuMemUnmap", mem_unmap, address, bytes);
}

MEMWATCH_HOOK CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  static std::atomic<MemRelease::Fn> real{nullptr};
  return call_next(real, "cuMemRelease", mem_release, handle);
}

MEMWATCH_HOOK CUresult cuGetProcAddress(const char* symbol, void** pfn, int version,
                                        cuuint64_t flags) {
  static std::atomic<GetProcV1> real{nullptr};
  return call_next(real, "cuGetProcAddress", get_proc_v1, symbol, pfn, version, flags);
}

MEMWATCH_HOOK CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult* status) {
  static std::atomic<GetProcV2> real{nullptr};
  return call_next(real, "cuGetProcAddress_v2", get_proc_v2, symbol, pfn, version, flags, status);
}

// ---- wrappers for functions fetched by pointer -------------------------------------------------

namespace memwatch::shim {

namespace {

template <typename F>
void* wrap_as(void* real) {
  return reinterpret_cast<void*>(F::wrap(reinterpret_cast<typename F::Fn>(real)));
}

}  // namespace

void* device_wrap_driver(const char* name, int version, void* real) noexcept {
  // cuda.h's versioned names: the _v2 functions (64-bit sizes and pointers) from CUDA 3.2,
  // cuGetProcAddress_v2 from 12.0. Older versions of a function are passed through.
  const bool v2 = version >= 3020;
  if (same(name, "cuMemAlloc")) return v2 ? wrap_as<MemAlloc>(real) : real;
  if (same(name, "cuMemFree")) return v2 ? wrap_as<MemFree>(real) : real;
  if (same(name, "cuMemAllocPitch")) return v2 ? wrap_as<MemAllocPitch>(real) : real;
  if (same(name, "cuMemAllocHost")) return v2 ? wrap_as<MemAllocHost>(real) : real;
  if (same(name, "cuMemHostAlloc")) return wrap_as<MemHostAlloc>(real);
  if (same(name, "cuMemFreeHost")) return wrap_as<MemFreeHost>(real);
  if (same(name, "cuMemAllocManaged")) return wrap_as<MemAllocManaged>(real);
  if (same(name, "cuMemAllocAsync")) return wrap_as<MemAllocAsync>(real);
  if (same(name, "cuMemFreeAsync")) return wrap_as<MemFreeAsync>(real);
  if (same(name, "cuMemCreate")) return wrap_as<MemCreate>(real);
  if (same(name, "cuMemMap")) return wrap_as<MemMap>(real);
  if (same(name, "cuMemUnmap")) return wrap_as<MemUnmap>(real);
  if (same(name, "cuMemRelease")) return wrap_as<MemRelease>(real);
  if (same(name, "cuGetProcAddress"))
    return version >= 12000 ? wrap_as<GetProcAddressV2>(real) : wrap_as<GetProcAddressV1>(real);
  return real;
}

void* device_wrap_driver_exported(void* handle, const char* name, void* real) noexcept {
  struct Entry {
    const char* name;
    void* (*wrap)(void*);
  };
  static constexpr Entry kExported[] = {
      {"cuMemAlloc_v2", wrap_as<MemAlloc>},
      {"cuMemFree_v2", wrap_as<MemFree>},
      {"cuMemAllocPitch_v2", wrap_as<MemAllocPitch>},
      {"cuMemAllocHost_v2", wrap_as<MemAllocHost>},
      {"cuMemHostAlloc", wrap_as<MemHostAlloc>},
      {"cuMemFreeHost", wrap_as<MemFreeHost>},
      {"cuMemAllocManaged", wrap_as<MemAllocManaged>},
      {"cuMemAllocAsync", wrap_as<MemAllocAsync>},
      {"cuMemAllocAsync_ptsz", wrap_as<MemAllocAsync>},
      {"cuMemFreeAsync", wrap_as<MemFreeAsync>},
      {"cuMemFreeAsync_ptsz", wrap_as<MemFreeAsync>},
      {"cuMemCreate", wrap_as<MemCreate>},
      {"cuMemMap", wrap_as<MemMap>},
      {"cuMemUnmap", wrap_as<MemUnmap>},
      {"cuMemRelease", wrap_as<MemRelease>},
      {"cuGetProcAddress", wrap_as<GetProcAddressV1>},
      {"cuGetProcAddress_v2", wrap_as<GetProcAddressV2>},
  };
  for (const Entry& e : kExported) {
    if (!same(name, e.name)) continue;
    device_note_cuda_seen();
    if (handle != RTLD_DEFAULT && g_ctx_get_device.load(std::memory_order_acquire) == nullptr)
      device_driver_queries_from(lookup_in_handle, handle);
    return e.wrap(real);
  }
  return real;
}

void device_driver_queries_from(DriverLookup lookup, void* context) noexcept {
  InternalScope internal;
  set_once(g_ctx_get_device, lookup(context, "cuCtxGetDevice"));
  set_once(g_device_get_mem_pool, lookup(context, "cuDeviceGetMemPool"));
  set_once(g_pool_get_attribute, lookup(context, "cuMemPoolGetAttribute"));
  set_once(g_device_get_pci_bus_id, lookup(context, "cuDeviceGetPCIBusId"));
}

bool device_pool_reserved(int device, std::uint64_t& pool, std::int64_t& reserved) noexcept {
  CUmemoryPool p{};
  if (!current_pool(device, p, reserved)) return false;
  pool = as_key(p);
  return true;
}

bool device_pci_bus_id(int device, char* out, int size) noexcept {
  auto fn = g_device_get_pci_bus_id.load(std::memory_order_acquire);
  return fn != nullptr && fn(out, size, device) == CUDA_SUCCESS;
}

void device_note_cuda_seen() noexcept {
  if (!g_cuda_seen.load(std::memory_order_relaxed))
    g_cuda_seen.store(true, std::memory_order_relaxed);
}

bool device_cuda_seen() noexcept {
  return g_cuda_seen.load(std::memory_order_relaxed);
}

bool device_hooks_count() noexcept {
  return !g_cupti_counting.load(std::memory_order_acquire);
}

void device_set_cupti_counting(bool on) noexcept {
  g_cupti_counting.store(on, std::memory_order_release);
}

namespace {

int find_self(dl_phdr_info* info, std::size_t, void* data) {
  auto* range = static_cast<std::uintptr_t*>(data);
  const auto probe = reinterpret_cast<std::uintptr_t>(&device_in_shim);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    if (probe >= begin && probe < begin + ph.p_memsz) {
      range[0] = begin;
      range[1] = begin + ph.p_memsz;
      return 1;
    }
  }
  return 0;
}

}  // namespace

bool device_in_shim(const void* address) noexcept {
  // The shim's executable segment: its hooks live there.
  static std::uintptr_t range[2] = {0, 0};
  static std::atomic<bool> known{false};
  if (!known.load(std::memory_order_acquire)) {
    dl_iterate_phdr(find_self, range);
    known.store(true, std::memory_order_release);
  }
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  return a - range[0] < range[1] - range[0];
}

}  // namespace memwatch::shim
