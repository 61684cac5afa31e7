/* A fake NVML (libnvidia-ml.so.1): the two devices of the fake driver, 1 GiB each, by index.
 * Only what memwatch asks: init, count, handle by index, memory info, shutdown. */
#include <stddef.h>

typedef int nvmlReturn_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

#define FAKE_DEVICES 2
static int g_devices[FAKE_DEVICES];
static int g_initialised;

nvmlReturn_t nvmlInit_v2(void) {
  g_initialised = 1;
  return 0;
}

nvmlReturn_t nvmlShutdown(void) {
  g_initialised = 0;
  return 0;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  if (!g_initialised) return 1;
  *count = FAKE_DEVICES;
  return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (!g_initialised || index >= FAKE_DEVICES) return 2;
  *device = &g_devices[index];
  return 0;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* memory) {
  if (!g_initialised || device == NULL) return 2;
  memory->total = 1ULL << 30;
  memory->used = 0;
  memory->free = memory->total;
  return 0;
}
