/* Programs that allocate device memory through every route a trainer uses, against the fake
 * CUDA libraries. Built twice: mw_device_rt links the fake runtime (and reaches the driver only
 * through dlopen, as a statically linked runtime does); mw_device_drv links the fake driver
 * directly. Each mode's exact peaks are worked out in device_test.cpp. At the end a program
 * prints what the fake driver itself still holds, as JSON. It knows nothing of memwatch. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef DIRECT_DRIVER
/* cudaGetDriverEntryPoint is deprecated in CUDA 13 and still what CUDA 12 programs call. */
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda_runtime_api.h>
#endif

#undef cuGetProcAddress

#define MiB (1024UL * 1024UL)

#define CHECK(call)                                                      \
  do {                                                                   \
    if ((call) != 0) {                                                   \
      fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call); \
      exit(2);                                                           \
    }                                                                    \
  } while (0)

static void print_truth(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  size_t (*used)(int) = lib == NULL ? NULL : (size_t (*)(int))dlsym(lib, "fake_cuda_device_used");
  printf("{\"device0_used\":%zu,\"device1_used\":%zu}\n", used ? used(0) : 0, used ? used(1) : 0);
}

#ifdef DIRECT_DRIVER

static void set_device(int device) {
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
  CHECK(cuCtxSetCurrent(ctx));
}

/* Every driver function called through the PLT: the shim's exported hooks. */
static void driver(void) {
  CHECK(cuInit(0));
  set_device(0);
  CUdeviceptr a, b, c, va;
  size_t pitch;
  CHECK(cuMemAlloc(&a, 32 * MiB));
  CHECK(cuMemAllocPitch(&b, &pitch, 100, 1000, 4)); /* 512-byte rows: 512000 bytes */
  if (cuMemAlloc(&c, 2048 * MiB) != CUDA_ERROR_OUT_OF_MEMORY) exit(3);
  CHECK(cuMemAllocAsync(&c, 1 * MiB, NULL)); /* the pool grows to 2 MiB */
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h;
  CHECK(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0));
  CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0));
  CHECK(cuMemMap(va, 2 * MiB, 0, h, 0));
  CUdeviceptr m;
  void* pinned;
  CHECK(cuMemAllocManaged(&m, 4 * MiB, CU_MEM_ATTACH_GLOBAL));
  CHECK(cuMemAllocHost(&pinned, 1 * MiB));
  /* The peak: 32 MiB + 512000 + 2 MiB of pool + 2 MiB mapped. */
  CHECK(cuMemFreeHost(pinned));
  CHECK(cuMemFree(m));
  CHECK(cuMemUnmap(va, 2 * MiB));
  CHECK(cuMemRelease(h));
  CHECK(cuMemAddressFree(va, 8 * MiB));
  CHECK(cuMemFreeAsync(c, NULL)); /* the pool keeps its 2 MiB */
  CHECK(cuMemFree(b));
  CHECK(cuMemFree(a));
}

#else

static void runtime(void) {
  void *a, *b, *d, *m, *h1, *h2;
  size_t pitch;
  struct cudaPitchedPtr c;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&a, 64 * MiB));
  CHECK(cudaMallocPitch(&b, &pitch, 1000, 1000)); /* 1024-byte rows: 1024000 bytes */
  const struct cudaExtent extent = {1000, 100, 10};
  CHECK(cudaMalloc3D(&c, extent)); /* 1024-byte rows x 100 x 10 */
  if (cudaMalloc(&d, 2048 * MiB) != cudaErrorMemoryAllocation) exit(3);
  if (getenv("DEVICE_ROUTES_PAUSE") != NULL) usleep(400 * 1000); /* lets memwatch try CUPTI */
  CHECK(cudaSetDevice(1));
  CHECK(cudaMalloc(&d, 16 * MiB));
  CHECK(cudaFree(d));
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(c.ptr));
  CHECK(cudaFree(b));
  CHECK(cudaFree(a));
  CHECK(cudaMallocManaged(&m, 8 * MiB, cudaMemAttachGlobal));
  CHECK(cudaFree(m));
  CHECK(cudaMallocHost(&h1, 4 * MiB));
  CHECK(cudaHostAlloc(&h2, 2 * MiB, cudaHostAllocDefault));
  CHECK(cudaFreeHost(h2));
  CHECK(cudaFreeHost(h1));
}

static void async_pool(void) {
  void *a, *b, *c, *d;
  cudaMemPool_t pool;
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceGetMemPool(&pool, 0));
  CHECK(cudaMallocAsync(&a, 3 * MiB, NULL)); /* the pool: 4 MiB */
  CHECK(cudaMallocAsync(&b, 4 * MiB, NULL)); /* 7 MiB used: 8 MiB */
  CHECK(cudaFreeAsync(a, NULL));
  CHECK(cudaMallocAsync(&c, 1 * MiB, NULL)); /* 5 MiB used, the pool stays at 8 */
  CHECK(cudaFreeAsync(b, NULL));
  CHECK(cudaFreeAsync(c, NULL));
  CHECK(cudaMemPoolTrimTo(pool, 0)); /* the pool gives everything back */
  CHECK(cudaMallocAsync(&d, 1 * MiB, NULL)); /* and grows again to 2 MiB, which it keeps */
  CHECK(cudaFreeAsync(d, NULL));
}

static void* open_driver(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) exit(4);
  return lib;
}

typedef CUresult (*GetProcV2)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
typedef CUresult (*GetProcV1)(const char*, void**, int, cuuint64_t);

/* A statically linked runtime's way: dlsym for cuGetProcAddress, everything else through it. */
static void getproc(void) {
  void* lib = open_driver();
  GetProcV2 gpa = (GetProcV2)dlsym(lib, "cuGetProcAddress_v2");
  if (gpa == NULL) exit(4);
  CUdriverProcAddressQueryResult st;
  CUresult (*init)(unsigned);
  CUresult (*retain)(CUcontext*, CUdevice);
  CUresult (*set_current)(CUcontext);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*alloc_async)(CUdeviceptr*, size_t, CUstream);
  CUresult (*free_async)(CUdeviceptr, CUstream);
  GetProcV1 gpa_v1;
  CHECK(gpa("cuInit", (void**)&init, 12000, 0, &st));
  CHECK(gpa("cuDevicePrimaryCtxRetain", (void**)&retain, 12000, 0, &st));
  CHECK(gpa("cuCtxSetCurrent", (void**)&set_current, 12000, 0, &st));
  CHECK(gpa("cuMemAlloc", (void**)&mem_alloc, 12000, 0, &st));
  CHECK(gpa("cuMemFree", (void**)&mem_free, 12000, 0, &st));
  CHECK(gpa("cuMemAllocAsync", (void**)&alloc_async, 12000,
            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
  CHECK(gpa("cuMemFreeAsync", (void**)&free_async, 12000,
            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
  /* The version-1 cuGetProcAddress, fetched through the current one. */
  CHECK(gpa("cuGetProcAddress", (void**)&gpa_v1, 11030, 0, &st));
  CUresult (*mem_alloc_again)(CUdeviceptr*, size_t);
  CHECK(gpa_v1("cuMemAlloc", (void**)&mem_alloc_again, 11030, 0));
  CUcontext ctx;
  CUdeviceptr a, b, c, fail;
  CHECK(init(0));
  CHECK(retain(&ctx, 1));
  CHECK(set_current(ctx));
  CHECK(mem_alloc(&a, 48 * MiB));
  CHECK(mem_alloc_again(&b, 16 * MiB));
  if (mem_alloc(&fail, 2048 * MiB) != CUDA_ERROR_OUT_OF_MEMORY) exit(3);
  CHECK(alloc_async(&c, 1 * MiB, NULL)); /* device 1's pool: 2 MiB */
  CHECK(free_async(c, NULL));
  CHECK(mem_free(b));
  CHECK(mem_free(a));
}

/* dlopen + dlsym of the exported names. */
static void dlsym_route(void) {
  void* lib = open_driver();
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(lib, "cuInit");
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) =
      (CUresult(*)(CUdeviceptr*, size_t))dlsym(lib, "cuMemAlloc_v2");
  CUresult (*mem_free)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))dlsym(lib, "cuMemFree_v2");
  CUresult (*managed)(CUdeviceptr*, size_t, unsigned) =
      (CUresult(*)(CUdeviceptr*, size_t, unsigned))dlsym(lib, "cuMemAllocManaged");
  CUresult (*host_alloc)(void**, size_t, unsigned) =
      (CUresult(*)(void**, size_t, unsigned))dlsym(lib, "cuMemHostAlloc");
  CUresult (*free_host)(void*) = (CUresult(*)(void*))dlsym(lib, "cuMemFreeHost");
  if (!init || !mem_alloc || !mem_free || !managed || !host_alloc || !free_host) exit(4);
  CUdeviceptr a, m;
  void* h;
  CHECK(init(0));
  CHECK(mem_alloc(&a, 40 * MiB));
  CHECK(managed(&m, 4 * MiB, CU_MEM_ATTACH_GLOBAL));
  CHECK(host_alloc(&h, 2 * MiB, 0));
  CHECK(free_host(h));
  CHECK(mem_free(m));
  CHECK(mem_free(a));
}

/* The runtime fetched by name from its own handle, as a framework that dlopens libcudart does. */
static void dlsym_runtime(void) {
  void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) exit(4);
  cudaError_t (*set_device)(int) = (cudaError_t(*)(int))dlsym(lib, "cudaSetDevice");
  cudaError_t (*malloc_fn)(void**, size_t) = (cudaError_t(*)(void**, size_t))dlsym(lib, "cudaMalloc");
  cudaError_t (*free_fn)(void*) = (cudaError_t(*)(void*))dlsym(lib, "cudaFree");
  if (!set_device || !malloc_fn || !free_fn) exit(4);
  void *a, *b;
  CHECK(set_device(1));
  CHECK(malloc_fn(&a, 24 * MiB));
  CHECK(malloc_fn(&b, 8 * MiB));
  CHECK(free_fn(a));
  CHECK(free_fn(b));
}

/* PyTorch's expandable segments: the VMM functions from cudaGetDriverEntryPointByVersion. */
static void entry_vmm(void) {
  CHECK(cudaSetDevice(0));
  enum cudaDriverEntryPointQueryResult st;
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                     unsigned long long);
  CUresult (*release)(CUmemGenericAllocationHandle);
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*unmap)(CUdeviceptr, size_t);
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*address_free)(CUdeviceptr, size_t);
  CHECK(cudaGetDriverEntryPointByVersion("cuMemCreate", (void**)&create, 12000, 0, &st));
  CHECK(cudaGetDriverEntryPointByVersion("cuMemRelease", (void**)&release, 12000, 0, &st));
  CHECK(cudaGetDriverEntryPointByVersion("cuMemMap", (void**)&map, 12000, 0, &st));
  CHECK(cudaGetDriverEntryPointByVersion("cuMemUnmap", (void**)&unmap, 12000, 0, &st));
  CHECK(cudaGetDriverEntryPointByVersion("cuMemAddressReserve", (void**)&reserve, 12000, 0, &st));
  CHECK(cudaGetDriverEntryPoint("cuMemAddressFree", (void**)&address_free, 0, &st));
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  const size_t seg = 20 * MiB;
  CUdeviceptr va;
  CUmemGenericAllocationHandle h1, h2, h3, h4;
  CHECK(reserve(&va, 128 * MiB, 0, 0, 0)); /* address space only */
  CHECK(create(&h1, seg, &prop, 0));
  CHECK(map(va, seg, 0, h1, 0));
  CHECK(release(h1)); /* still mapped: still memory (20 MiB) */
  CHECK(create(&h2, seg, &prop, 0));
  CHECK(map(va + seg, seg, 0, h2, 0)); /* 40 MiB */
  CHECK(create(&h3, seg, &prop, 0));
  CHECK(map(va + 2 * seg, seg, 0, h3, 0)); /* 60 MiB: the peak */
  CHECK(unmap(va, seg));                   /* h1 is gone: 40 MiB */
  CHECK(create(&h4, seg, &prop, 0));
  CHECK(map(va, seg, 0, h4, 0)); /* 60 MiB again */
  CHECK(unmap(va, 3 * seg));     /* three mappings at once; none released yet: 60 MiB */
  CHECK(release(h2));
  CHECK(release(h3));
  CHECK(release(h4));
  CHECK(address_free(va, 128 * MiB));
}

static pthread_barrier_t g_barrier;

static void* holder(void* arg) {
  const int device = (int)(long)arg % 2;
  void* blocks[4];
  CHECK(cudaSetDevice(device));
  /* All four make the process's first counted call at once: none may be counted before the
     shim knows how to ask for the current device. */
  pthread_barrier_wait(&g_barrier);
  for (int i = 0; i < 4; ++i) CHECK(cudaMalloc(&blocks[i], 8 * MiB));
  pthread_barrier_wait(&g_barrier); /* all four threads hold their 32 MiB here */
  for (int i = 0; i < 4; ++i) CHECK(cudaFree(blocks[i]));
  return NULL;
}

static void threads(void) {
  pthread_t t[4];
  pthread_barrier_init(&g_barrier, NULL, 4);
  for (long i = 0; i < 4; ++i) pthread_create(&t[i], NULL, holder, (void*)i);
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
}

/* A job of two processes: the parent holds 32 MiB on device 0 while the child it forked holds
 * 16 MiB on device 0 and 8 MiB on device 1 (the child's inherited 32 MiB are the parent's). */
static void forked(void) {
  int holding[2], done[2];
  char byte = 0;
  void *mine, *first, *second;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&mine, 32 * MiB));
  if (pipe(holding) != 0 || pipe(done) != 0) exit(70);
  const pid_t child = fork();
  if (child == 0) {
    CHECK(cudaMalloc(&first, 16 * MiB));
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&second, 8 * MiB));
    if (write(holding[1], &byte, 1) != 1 || read(done[0], &byte, 1) != 1) _exit(71);
    CHECK(cudaFree(second));
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(first));
    _exit(0);
  }
  if (read(holding[0], &byte, 1) != 1 || write(done[1], &byte, 1) != 1) exit(72);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) exit(73);
  CHECK(cudaFree(mine));
}

/* A workload whose device peak is its parameter: N MiB on device 0, held at once. */
static void alloc_mib(long mib) {
  void* p;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&p, (size_t)mib * MiB));
  CHECK(cudaFree(p));
}

/* STEP MiB more on device 0 every STEP_MS until TOTAL MiB, held HOLD_MS, then freed. */
static void grow(long total, long step, long step_ms, long hold_ms) {
  enum { kMaxBlocks = 1024 };
  static void* blocks[kMaxBlocks];
  int n = 0;
  CHECK(cudaSetDevice(0));
  for (long held = 0; held + step <= total && n < kMaxBlocks; held += step) {
    CHECK(cudaMalloc(&blocks[n++], (size_t)step * MiB));
    usleep((useconds_t)(step_ms * 1000));
  }
  usleep((useconds_t)(hold_ms * 1000));
  while (n > 0) CHECK(cudaFree(blocks[--n]));
}

/* dlsym(RTLD_NEXT) from the program must still answer relative to the program: the next
 * malloc after the executable is the preloaded one, the same that RTLD_DEFAULT finds. */
static void rtld_next(void) {
  printf("{\"same\":%d}\n", dlsym(RTLD_NEXT, "malloc") == dlsym(RTLD_DEFAULT, "malloc"));
}

#endif

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (getenv("DEVICE_ROUTES_WARMUP") != NULL) {
    /* The usual "create the context" call, then time for memwatch to bring CUPTI up. */
#ifdef DIRECT_DRIVER
    CHECK(cuMemFree(0));
#else
    CHECK(cudaFree(NULL));
#endif
    usleep(400 * 1000);
  }
#ifdef DIRECT_DRIVER
  if (strcmp(mode, "driver") == 0) driver();
  else return 64;
#else
  if (strcmp(mode, "runtime") == 0) runtime();
  else if (strcmp(mode, "async") == 0) async_pool();
  else if (strcmp(mode, "getproc") == 0) getproc();
  else if (strcmp(mode, "dlsym") == 0) dlsym_route();
  else if (strcmp(mode, "dlsym_runtime") == 0) dlsym_runtime();
  else if (strcmp(mode, "entry_vmm") == 0) entry_vmm();
  else if (strcmp(mode, "threads") == 0) threads();
  else if (strcmp(mode, "forked") == 0) forked();
  else if (strcmp(mode, "rtld_next") == 0) rtld_next();
  else if (strcmp(mode, "alloc_mib") == 0 && argc > 2) alloc_mib(atol(argv[2]));
  else if (strcmp(mode, "grow") == 0 && argc > 5)
    grow(atol(argv[2]), atol(argv[3]), atol(argv[4]), atol(argv[5]));
  else return 64;
#endif
  print_truth();
  return 0;
}
