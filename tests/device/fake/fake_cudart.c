/* A fake CUDA runtime (libcudart.so.13) built the way the real one is: it dlopens libcuda.so.1,
 * fetches cuGetProcAddress_v2 with dlsym and every driver function through it, and implements
 * each runtime call with driver calls. So under memwatch its driver calls pass through the
 * shim's wrappers while the runtime call itself is hooked: the case where counting twice would
 * be easy. */
#define _GNU_SOURCE
#include <cuda.h>
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda_runtime_api.h>
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

cudaError_t CUDARTAPI cudaMalloc(void** p, size_t bytes) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc((CUdeviceptr*)p, bytes));
}

cudaError_t CUDARTAPI cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc_pitch((CUdeviceptr*)p, pitch, width, height, 4));
}

cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* pitched, struct cudaExtent extent) {
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

cudaError_t CUDARTAPI cudaFree(void* p) {
  NEED_DRIVER;
  return error_of(g_drv.mem_free((CUdeviceptr)p));
}

cudaError_t CUDARTAPI cudaMallocManaged(void** p, size_t bytes, unsigned flags) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc_managed((CUdeviceptr*)p, bytes, flags));
}

cudaError_t CUDARTAPI cudaMallocHost(void** p, size_t bytes) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc_host(p, bytes));
}

cudaError_t CUDARTAPI cudaHostAlloc(void** p, size_t bytes, unsigned flags) {
  NEED_DRIVER;
  return error_of(g_drv.mem_host_alloc(p, bytes, flags));
}

cudaError_t CUDARTAPI cudaFreeHost(void* p) {
  NEED_DRIVER;
  return error_of(g_drv.mem_free_host(p));
}

cudaError_t CUDARTAPI cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
  NEED_DRIVER;
  return error_of(g_drv.mem_alloc_async((CUdeviceptr*)p, bytes, (CUstream)stream));
}

cudaError_t CUDARTAPI cudaFreeAsync(void* p, cudaStream_t stream) {
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
