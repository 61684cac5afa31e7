/* A fake CUDA driver (libcuda.so.1) for tests without a GPU: two devices of 1 GiB each, memory
 * functions with the real signatures, stream-ordered pools that keep what they grew to, the
 * virtual-memory API, and cuGetProcAddress (v1 and _v2) answering by name and version as the
 * real driver does. "Device" memory is anonymous memory taken by raw syscall, so that a
 * preloaded memwatch never counts it as host memory. Bookkeeping is in static tables under one
 * mutex: the fake needs to be right, not fast. The memory functions report their calls, enter
 * and exit, to a tracer the fake CUPTI (fake_cupti.c) installs, as the real driver reports them
 * to CUPTI. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#undef cuGetProcAddress

#define FAKE_DEVICES 2
#define FAKE_CAPACITY (1ULL << 30)
#define FAKE_POOL_GRANULE (2ULL << 20)
#define FAKE_TABLE 4096

enum { KIND_DEVICE, KIND_MANAGED, KIND_HOST, KIND_POOLED };

struct block {
  uintptr_t address;
  size_t bytes;
  int device;
  int kind;
};

struct handle {
  CUmemGenericAllocationHandle id;
  uintptr_t memory;
  size_t bytes;
  int device;
  int maps;
  int released;
};

struct pool {
  size_t used, reserved, high;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block g_blocks[FAKE_TABLE];
static struct handle g_handles[FAKE_TABLE];
static struct pool g_pools[FAKE_DEVICES];
static size_t g_device_used[FAKE_DEVICES]; /* physical bytes held on each device */
static CUmemGenericAllocationHandle g_next_handle = 0x1000;
static __thread int t_device;              /* the calling thread's current context's device */

static void* raw_map(size_t bytes, int prot) {
  long p = syscall(SYS_mmap, 0, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p < 0 ? NULL : (void*)p;
}

static void raw_unmap(uintptr_t p, size_t bytes) { syscall(SYS_munmap, p, bytes); }

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

/* Takes `bytes` of the device's capacity; 0 when it does not fit (nothing is changed then). */
static int reserve(int device, size_t bytes) {
  if (g_device_used[device] + bytes > FAKE_CAPACITY) return 0;
  g_device_used[device] += bytes;
  return 1;
}

static CUresult alloc_block(uintptr_t* out, size_t bytes, int kind) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  const int device = t_device;
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  if (kind == KIND_HOST || kind == KIND_MANAGED || reserve(device, bytes)) {
    void* p = raw_map(bytes, PROT_READ | PROT_WRITE);
    for (int i = 0; p != NULL && i < FAKE_TABLE; ++i) {
      if (g_blocks[i].address != 0) continue;
      g_blocks[i] = (struct block){(uintptr_t)p, bytes, device, kind};
      *out = (uintptr_t)p;
      r = CUDA_SUCCESS;
      break;
    }
    if (r != CUDA_SUCCESS && kind != KIND_HOST && kind != KIND_MANAGED)
      g_device_used[device] -= bytes;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

static CUresult free_block(uintptr_t address, int host) {
  if (address == 0) return CUDA_SUCCESS;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < FAKE_TABLE; ++i) {
    struct block* b = &g_blocks[i];
    if (b->address != address || (b->kind == KIND_HOST) != host) continue;
    if (b->kind == KIND_DEVICE) g_device_used[b->device] -= b->bytes;
    if (b->kind == KIND_POOLED) g_pools[b->device].used -= b->bytes;
    raw_unmap(b->address, b->bytes);
    b->address = 0;
    r = CUDA_SUCCESS;
    break;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

/* ---- devices and contexts ------------------------------------------------------------- */

CUresult CUDAAPI cuInit(unsigned int flags) {
  (void)flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = FAKE_DEVICES;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= FAKE_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

/* A context is its device's number plus one. */
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (device < 0 || device >= FAKE_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = (CUcontext)(uintptr_t)(device + 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  const int device = (int)(uintptr_t)ctx - 1;
  if (device < 0 || device >= FAKE_DEVICES) return CUDA_ERROR_INVALID_CONTEXT;
  t_device = device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  *device = t_device;
  return CUDA_SUCCESS;
}

/* ---- plain allocations ------------------------------------------------------------------ */

static CUresult impl_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  uintptr_t p = 0;
  const CUresult r = alloc_block(&p, bytes, KIND_DEVICE);
  if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)p;
  return r;
}

/* Rows are padded to 512 bytes, as a real device pads them to its texture alignment. */
static CUresult impl_cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                    unsigned int element_bytes) {
  (void)element_bytes;
  const size_t row = round_up(width, 512);
  const CUresult r = impl_cuMemAlloc_v2(dptr, row * height);
  if (r == CUDA_SUCCESS) *pitch = row;
  return r;
}

static CUresult impl_cuMemFree_v2(CUdeviceptr dptr) { return free_block((uintptr_t)dptr, 0); }

static CUresult impl_cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  (void)flags;
  uintptr_t p = 0;
  const CUresult r = alloc_block(&p, bytes, KIND_MANAGED);
  if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)p;
  return r;
}

static CUresult impl_cuMemAllocHost_v2(void** pp, size_t bytes) {
  uintptr_t p = 0;
  const CUresult r = alloc_block(&p, bytes, KIND_HOST);
  if (r == CUDA_SUCCESS) *pp = (void*)p;
  return r;
}

static CUresult impl_cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  (void)flags;
  return impl_cuMemAllocHost_v2(pp, bytes);
}

static CUresult impl_cuMemFreeHost(void* p) { return free_block((uintptr_t)p, 1); }

/* ---- stream-ordered pools: one per device, growing in 2 MiB steps, keeping what they grew to
 * until trimmed (as with a release threshold above the pool's size) ---------------------------- */

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice device) {
  if (device < 0 || device >= FAKE_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  *pool = (CUmemoryPool)&g_pools[device];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  const struct pool* p = (const struct pool*)pool;
  pthread_mutex_lock(&g_lock);
  CUresult r = CUDA_SUCCESS;
  switch (attr) {
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t*)value = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t*)value = p->high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t*)value = p->used; break;
    default: r = CUDA_ERROR_NOT_SUPPORTED;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  struct pool* p = (struct pool*)pool;
  const int device = (int)(p - g_pools);
  pthread_mutex_lock(&g_lock);
  size_t target = round_up(p->used, FAKE_POOL_GRANULE);
  if (target < keep) target = keep;
  if (target < p->reserved) {
    g_device_used[device] -= p->reserved - target;
    p->reserved = target;
  }
  pthread_mutex_unlock(&g_lock);
  return CUDA_SUCCESS;
}

static CUresult impl_cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  (void)stream;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  const int device = t_device;
  struct pool* p = &g_pools[device];
  const size_t needed = round_up(p->used + bytes, FAKE_POOL_GRANULE);
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  if (needed <= p->reserved || reserve(device, needed - p->reserved)) {
    if (needed > p->reserved) p->reserved = needed;
    if (p->reserved > p->high) p->high = p->reserved;
    void* m = raw_map(bytes, PROT_READ | PROT_WRITE);
    for (int i = 0; m != NULL && i < FAKE_TABLE; ++i) {
      if (g_blocks[i].address != 0) continue;
      g_blocks[i] = (struct block){(uintptr_t)m, bytes, device, KIND_POOLED};
      p->used += bytes;
      *dptr = (CUdeviceptr)(uintptr_t)m;
      r = CUDA_SUCCESS;
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

static CUresult impl_cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return impl_cuMemAllocAsync(dptr, bytes, stream);
}

static CUresult impl_cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  (void)stream;
  return free_block((uintptr_t)dptr, 0);
}

static CUresult impl_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  return impl_cuMemFreeAsync(dptr, stream);
}

/* ---- the virtual-memory API: physical memory lives from create until released and unmapped -- */

static struct handle* find_handle(CUmemGenericAllocationHandle id) {
  for (int i = 0; i < FAKE_TABLE; ++i)
    if (g_handles[i].id == id) return &g_handles[i];
  return NULL;
}

static void drop_if_unused(struct handle* h) {
  if (!h->released || h->maps > 0) return;
  g_device_used[h->device] -= h->bytes;
  raw_unmap(h->memory, h->bytes);
  h->id = 0;
}

static CUresult impl_cuMemCreate(CUmemGenericAllocationHandle* out, size_t bytes,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  (void)flags;
  if (prop == NULL || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || bytes == 0 ||
      bytes % FAKE_POOL_GRANULE != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const int device = prop->location.id;
  if (device < 0 || device >= FAKE_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&g_lock);
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  struct handle* h = find_handle(0);
  if (h != NULL && reserve(device, bytes)) {
    void* m = raw_map(bytes, PROT_READ | PROT_WRITE);
    *h = (struct handle){g_next_handle++, (uintptr_t)m, bytes, device, 0, 0};
    *out = h->id;
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

static CUresult impl_cuMemRelease(CUmemGenericAllocationHandle id) {
  pthread_mutex_lock(&g_lock);
  struct handle* h = id == 0 ? NULL : find_handle(id);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (h != NULL && !h->released) {
    h->released = 1;
    drop_if_unused(h);
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

/* Address ranges: reserved as inaccessible memory (not memory at all until mapped). */
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t bytes, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  (void)alignment, (void)addr, (void)flags;
  void* p = raw_map(bytes, PROT_NONE);
  if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t bytes) {
  raw_unmap((uintptr_t)ptr, bytes);
  return CUDA_SUCCESS;
}

/* Mappings are remembered by address in the block table (kind KIND_DEVICE, device -1). */
static CUresult impl_cuMemMap(CUdeviceptr ptr, size_t bytes, size_t offset,
                          CUmemGenericAllocationHandle id, unsigned long long flags) {
  (void)offset, (void)flags;
  pthread_mutex_lock(&g_lock);
  struct handle* h = id == 0 ? NULL : find_handle(id);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; h != NULL && i < FAKE_TABLE; ++i) {
    if (g_blocks[i].address != 0) continue;
    g_blocks[i] = (struct block){(uintptr_t)ptr, bytes, -1, (int)(h - g_handles)};
    ++h->maps;
    r = CUDA_SUCCESS;
    break;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

static CUresult impl_cuMemUnmap(CUdeviceptr ptr, size_t bytes) {
  pthread_mutex_lock(&g_lock);
  const uintptr_t begin = (uintptr_t)ptr, end = begin + bytes;
  for (int i = 0; i < FAKE_TABLE; ++i) {
    struct block* b = &g_blocks[i];
    if (b->device != -1 || b->address < begin || b->address >= end) continue;
    struct handle* h = &g_handles[b->kind];
    b->address = 0;
    b->device = 0;
    --h->maps;
    drop_if_unused(h);
  }
  pthread_mutex_unlock(&g_lock);
  return CUDA_SUCCESS;
}

/* Test hook: the physical bytes the fake holds on a device (the truth the tests compare to). */
size_t fake_cuda_device_used(int device) {
  pthread_mutex_lock(&g_lock);
  const size_t used = g_device_used[device];
  pthread_mutex_unlock(&g_lock);
  return used;
}

/* ---- the exported memory functions: traced when a tracer is installed ---------------------- */

typedef void (*fake_tracer)(CUpti_CallbackDomain, CUpti_CallbackId, CUpti_ApiCallbackSite,
                            CUcontext, void* params, const void* ret, uint64_t* correlation);
static _Atomic(fake_tracer) g_tracer;

void fake_cuda_set_tracer(fake_tracer tracer) { atomic_store(&g_tracer, tracer); }

#define TRACED(id, params, call)                                                          \
  do {                                                                                     \
    const fake_tracer t_ = atomic_load(&g_tracer);                                         \
    CUcontext ctx_ = (CUcontext)(uintptr_t)(t_device + 1);                                 \
    uint64_t correlation_ = 0;                                                             \
    if (t_) t_(CUPTI_CB_DOMAIN_DRIVER_API, id, CUPTI_API_ENTER, ctx_, params, NULL, &correlation_); \
    CUresult r_ = (call);                                                                  \
    if (t_) t_(CUPTI_CB_DOMAIN_DRIVER_API, id, CUPTI_API_EXIT, ctx_, params, &r_, &correlation_); \
    return r_;                                                                             \
  } while (0)

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  cuMemAlloc_v2_params p = {dptr, bytes};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p, impl_cuMemAlloc_v2(dptr, bytes));
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                    unsigned int element_bytes) {
  cuMemAllocPitch_v2_params p = {dptr, pitch, width, height, element_bytes};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, &p,
         impl_cuMemAllocPitch_v2(dptr, pitch, width, height, element_bytes));
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  cuMemFree_v2_params p = {dptr};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &p, impl_cuMemFree_v2(dptr));
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  cuMemAllocManaged_params p = {dptr, bytes, flags};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, &p, impl_cuMemAllocManaged(dptr, bytes, flags));
}

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytes) {
  cuMemAllocHost_v2_params p = {pp, bytes};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, &p, impl_cuMemAllocHost_v2(pp, bytes));
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  cuMemHostAlloc_params p = {pp, bytes, flags};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, &p, impl_cuMemHostAlloc(pp, bytes, flags));
}

CUresult CUDAAPI cuMemFreeHost(void* ptr) {
  cuMemFreeHost_params p = {ptr};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &p, impl_cuMemFreeHost(ptr));
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  cuMemAllocAsync_params p = {dptr, bytes, stream};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &p, impl_cuMemAllocAsync(dptr, bytes, stream));
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  cuMemAllocAsync_ptsz_params p = {dptr, bytes, stream};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, &p,
         impl_cuMemAllocAsync_ptsz(dptr, bytes, stream));
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  cuMemFreeAsync_params p = {dptr, stream};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, &p, impl_cuMemFreeAsync(dptr, stream));
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  cuMemFreeAsync_ptsz_params p = {dptr, stream};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, &p, impl_cuMemFreeAsync_ptsz(dptr, stream));
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* out, size_t bytes,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  cuMemCreate_params p = {out, bytes, prop, flags};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &p, impl_cuMemCreate(out, bytes, prop, flags));
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle id) {
  cuMemRelease_params p = {id};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &p, impl_cuMemRelease(id));
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t bytes, size_t offset,
                          CUmemGenericAllocationHandle id, unsigned long long flags) {
  cuMemMap_params p = {ptr, bytes, offset, id, flags};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &p, impl_cuMemMap(ptr, bytes, offset, id, flags));
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t bytes) {
  cuMemUnmap_params p = {ptr, bytes};
  TRACED(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &p, impl_cuMemUnmap(ptr, bytes));
}

/* ---- cuGetProcAddress ------------------------------------------------------------------- */

struct entry {
  const char* name;
  int since; /* the CUDA version from which this function answers for `name` */
  int per_thread;
  void* fn;
};

#define ENTRY(name, since, fn) {name, since, 0, (void*)(fn)}
#define PTSZ(name, since, fn) {name, since, 1, (void*)(fn)}

CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags);
CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult* status);

static const struct entry g_entries[] = {
    ENTRY("cuInit", 2000, cuInit),
    ENTRY("cuDriverGetVersion", 2020, cuDriverGetVersion),
    ENTRY("cuDeviceGetCount", 2000, cuDeviceGetCount),
    ENTRY("cuDeviceGet", 2000, cuDeviceGet),
    ENTRY("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    ENTRY("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    ENTRY("cuCtxGetDevice", 2000, cuCtxGetDevice),
    ENTRY("cuMemAlloc", 3020, cuMemAlloc_v2),
    ENTRY("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    ENTRY("cuMemFree", 3020, cuMemFree_v2),
    ENTRY("cuMemAllocManaged", 6000, cuMemAllocManaged),
    ENTRY("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    ENTRY("cuMemHostAlloc", 2020, cuMemHostAlloc),
    ENTRY("cuMemFreeHost", 2000, cuMemFreeHost),
    ENTRY("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    ENTRY("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    ENTRY("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    ENTRY("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PTSZ("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    ENTRY("cuMemFreeAsync", 11020, cuMemFreeAsync),
    PTSZ("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    ENTRY("cuMemCreate", 10020, cuMemCreate),
    ENTRY("cuMemRelease", 10020, cuMemRelease),
    ENTRY("cuMemAddressReserve", 10020, cuMemAddressReserve),
    ENTRY("cuMemAddressFree", 10020, cuMemAddressFree),
    ENTRY("cuMemMap", 10020, cuMemMap),
    ENTRY("cuMemUnmap", 10020, cuMemUnmap),
    ENTRY("cuGetProcAddress", 11030, cuGetProcAddress),
    ENTRY("cuGetProcAddress", 12000, cuGetProcAddress_v2),
};

static CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  const int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const struct entry* best = NULL;
  for (size_t i = 0; i < sizeof g_entries / sizeof g_entries[0]; ++i) {
    const struct entry* e = &g_entries[i];
    if (strcmp(e->name, symbol) != 0 || e->since > version) continue;
    if (e->per_thread && !per_thread) continue;
    if (best == NULL || e->since > best->since || (e->per_thread && !best->per_thread)) best = e;
  }
  *pfn = best == NULL ? NULL : best->fn;
  return best == NULL ? CUDA_ERROR_NOT_FOUND : CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return lookup(symbol, pfn, version, flags);
}

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  const CUresult r = lookup(symbol, pfn, version, flags);
  if (status != NULL)
    *status = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return r;
}
