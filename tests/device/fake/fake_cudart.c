/* A fake CUDA runtime (libcudart.so.13) built the way the real one is: it dlopens libcuda.so.1,
 * fetches cuGetProcAddress_v2 with dlsym and every driver function through it, and implements
 * each runtime call with driver calls. So under memwatch its driver calls pass through the
 * shim's wrappers while the runtime call itself is hooked: the case where counting twice would
 * be easy. Its memory calls are reported to the fake CUPTI's tracer, enter and exit, as the real
 * runtime reports them to CUPTI. */
#define _GNU_SOURCE
#include <cuda.h>
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdatomic.h>
#include <stdint.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#undef cuGetProcAddress

struct driver {
  CUresult (*get_proc)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  CUresult (*init)(unsigned);
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*ctx_get_device)(CUdevice*);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_alloc_pitch)(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*mem_alloc_managed)(CUdeviceptr*, size_t, unsigned);
  CUresult (*mem_alloc_host)(void**, size_t);
  CUresult (*mem_host_alloc)(void**, size_t, unsigned);
  CUresult (*mem_free_host)(void*);
  CUresult (*mem_alloc_async)(CUdeviceptr*, size_t, CUstream);
  CUresult (*mem_free_async)(CUdeviceptr, CUstream);
  CUresult (*device_get_mem_pool)(CUmemoryPool*, CUdevice);
  CUresult (*pool_get_attribute)(CUmemoryPool, CUmemPool_attribute, void*);
  CUresult (*pool_trim_to)(CUmemoryPool, size_t);
};

static struct driver g_drv;
static int g_ready;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fetch(const char* name, void* slot) {
  CUdriverProcAddressQueryResult status;
  if (g_drv.get_proc(name, (void**)slot, CUDART_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
      CUDA_SUCCESS)
    *(void**)slot = NULL;
}

static void load(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return;
  *(void**)&g_drv.get_proc = dlsym(lib, "cuGetProcAddress_v2");
  if (g_drv.get_proc == NULL) return;
  fetch("cuInit", &g_drv.init);
  fetch("cuDevicePrimaryCtxRetain", &g_drv.primary_ctx_retain);
  fetch("cuCtxSetCurrent", &g_drv.ctx_set_current);
  fetch("cuCtxGetDevice", &g_drv.ctx_get_device);
  fetch("cuMemAlloc", &g_drv.mem_alloc);
  fetch("cuMemAllocPitch", &g_drv.mem_alloc_pitch);
  fetch("cuMemFree", &g_drv.mem_free);
  fetch("cuMemAllocManaged", &g_drv.mem_alloc_managed);
  fetch("cuMemAllocHost", &g_drv.mem_alloc_host);
  fetch("cuMemHostAlloc", &g_drv.mem_host_alloc);
  fetch("cuMemFreeHost", &g_drv.mem_free_host);
  fetch("cuMemAllocAsync", &g_drv.mem_alloc_async);
  fetch("cuMemFreeAsync", &g_drv.mem_free_async);
  fetch("cuDeviceGetMemPool", &g_drv.device_get_mem_pool);
  fetch("cuMemPoolGetAttribute", &g_drv.pool_get_attribute);
  fetch("cuMemPoolTrimTo", &g_drv.pool_trim_to);
  g_ready = g_drv.init != NULL && g_drv.init(0) == CUDA_SUCCESS;
}

static int ready(void) {
  pthread_once(&g_once, load);
  return g_ready;
}

static cudaError_t error_of(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    default: return cudaErrorInvalidValue;
  }
}

#define NEED_DRIVER \
  if (!ready()) return cudaErrorInsufficientDriver

cudaError_t CUDARTAPI cudaSetDevice(int device) {
  NEED_DRIVER;
  CUcontext ctx;
  const CUresult r = g_drv.primary_ctx_retain(&ctx, device);
  return error_of(r == CUDA_SUCCESS ? g_drv.ctx_set_current(ctx) : r);
}

cudaError_t CUDARTAPI cudaGetDevice(int* device) {
  NEED_DRIVER;
  CUdevice d = 0;
  const CUresult r = g_drv.ctx_get_device(&d);
  *device = d;
  return error_of(r);
}

static cudaError_t impl_cudaMalloc(void** p, size_t bytes) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc((CUdeviceptr*)p, bytes));
}

static cudaError_t impl_cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc_pitch((CUdeviceptr*)p, pitch, width, height, 4));
}

static cudaError_t impl_cudaMalloc3D(struct cudaPitchedPtr* pitched, struct cudaExtent extent) {
  NEED_DRIVER;
  size_t pitch = 0;
  void* p = NULL;
  const CUresult r = g_drv.mem_alloc_pitch((CUdeviceptr*)&p, &pitch, extent.width,
                                           extent.height * extent.depth, 4);
  if (r == CUDA_SUCCESS) {
    pitched->ptr = p;
    pitched->pitch = pitch;
    pitched->xsize = extent.width;
    pitched->ysize = extent.height;
  }
  return error_of(r);
}

static cudaError_t impl_cudaFree(void* p) {
  NEED_DRIVER;
  return error_of(g_drv.mem_free((CUdeviceptr)p));
}

static cudaError_t impl_cudaMallocManaged(void** p, size_t bytes, unsigned flags) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc_managed((CUdeviceptr*)p, bytes, flags));
}

static cudaError_t impl_cudaMallocHost(void** p, size_t bytes) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc_host(p, bytes));
}

static cudaError_t impl_cudaHostAlloc(void** p, size_t bytes, unsigned flags) {
  NEED_DRIVER;
  return error_of(g_drv.mem_host_alloc(p, bytes, flags));
}

static cudaError_t impl_cudaFreeHost(void* p) {
  NEED_DRIVER;
  return error_of(g_drv.mem_free_host(p));
}

static cudaError_t impl_cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc_async((CUdeviceptr*)p, bytes, (CUstream)stream));
}

static cudaError_t impl_cudaFreeAsync(void* p, cudaStream_t stream) {
  NEED_DRIVER;
  return error_of(g_drv.mem_free_async((CUdeviceptr)p, (CUstream)stream));
}

cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  NEED_DRIVER;
  return error_of(g_drv.device_get_mem_pool((CUmemoryPool*)pool, device));
}

cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr,
                                              void* value) {
  NEED_DRIVER;
  /* The runtime's and the driver's attribute numbers agree. */
  return error_of(g_drv.pool_get_attribute((CUmemoryPool)pool, (CUmemPool_attribute)attr, value));
}

cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  NEED_DRIVER;
  return error_of(g_drv.pool_trim_to((CUmemoryPool)pool, keep));
}

cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char* symbol, void** fn,
                                                       unsigned int version,
                                                       unsigned long long flags,
                                                       enum cudaDriverEntryPointQueryResult* status) {
  NEED_DRIVER;
  CUdriverProcAddressQueryResult found;
  const CUresult r = g_drv.get_proc(symbol, fn, (int)version, flags, &found);
  if (status != NULL)
    *status = found == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                                                   : cudaDriverEntryPointSymbolNotFound;
  return error_of(r);
}

cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char* symbol, void** fn,
                                              unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion(symbol, fn, CUDART_VERSION, flags, status);
}

/* ---- the exported memory functions: traced when a tracer is installed ---------------------- */

typedef void (*fake_tracer)(CUpti_CallbackDomain, CUpti_CallbackId, CUpti_ApiCallbackSite,
                            CUcontext, void* params, const void* ret, uint64_t* correlation);
static _Atomic(fake_tracer) g_tracer;

void fake_cudart_set_tracer(fake_tracer tracer) { atomic_store(&g_tracer, tracer); }

static CUcontext current_context(void) {
  CUdevice d = 0;
  if (!ready() || g_drv.ctx_get_device(&d) != CUDA_SUCCESS) return NULL;
  return (CUcontext)(uintptr_t)(d + 1);
}

#define TRACED(id, params, call)                                                           \
  do {                                                                                      \
    const fake_tracer t_ = atomic_load(&g_tracer);                                          \
    CUcontext ctx_ = t_ ? current_context() : NULL;                                         \
    uint64_t correlation_ = 0;                                                              \
    if (t_) t_(CUPTI_CB_DOMAIN_RUNTIME_API, id, CUPTI_API_ENTER, ctx_, params, NULL, &correlation_); \
    cudaError_t r_ = (call);                                                                \
    if (t_) t_(CUPTI_CB_DOMAIN_RUNTIME_API, id, CUPTI_API_EXIT, ctx_, params, &r_, &correlation_); \
    return r_;                                                                              \
  } while (0)

cudaError_t CUDARTAPI cudaMalloc(void** ptr, size_t bytes) {
  cudaMalloc_v3020_params p = {ptr, bytes};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &p, impl_cudaMalloc(ptr, bytes));
}

cudaError_t CUDARTAPI cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  cudaMallocPitch_v3020_params p = {ptr, pitch, width, height};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020, &p,
         impl_cudaMallocPitch(ptr, pitch, width, height));
}

cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* pitched, struct cudaExtent extent) {
  cudaMalloc3D_v3020_params p = {pitched, extent};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020, &p, impl_cudaMalloc3D(pitched, extent));
}

cudaError_t CUDARTAPI cudaFree(void* ptr) {
  cudaFree_v3020_params p = {ptr};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &p, impl_cudaFree(ptr));
}

cudaError_t CUDARTAPI cudaMallocManaged(void** ptr, size_t bytes, unsigned flags) {
  cudaMallocManaged_v6000_params p = {ptr, bytes, flags};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, &p,
         impl_cudaMallocManaged(ptr, bytes, flags));
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t bytes) {
  cudaMallocHost_v3020_params p = {ptr, bytes};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, &p, impl_cudaMallocHost(ptr, bytes));
}

cudaError_t CUDARTAPI cudaHostAlloc(void** ptr, size_t bytes, unsigned flags) {
  cudaHostAlloc_v3020_params p = {ptr, bytes, flags};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, &p, impl_cudaHostAlloc(ptr, bytes, flags));
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  cudaFreeHost_v3020_params p = {ptr};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, &p, impl_cudaFreeHost(ptr));
}

cudaError_t CUDARTAPI cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream) {
  cudaMallocAsync_v11020_params p = {ptr, bytes, stream};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, &p,
         impl_cudaMallocAsync(ptr, bytes, stream));
}

cudaError_t CUDARTAPI cudaFreeAsync(void* ptr, cudaStream_t stream) {
  cudaFreeAsync_v11020_params p = {ptr, stream};
  TRACED(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, &p, impl_cudaFreeAsync(ptr, stream));
}
