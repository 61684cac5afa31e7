#include "device/device_nvml.hpp"

#include <dlfcn.h>

#include <atomic>

#include "counting/counters.hpp"
#include "device/device_hooks.hpp"
#include "optional_library.hpp"

namespace memwatch::shim {

namespace {

// NVML's C interface as documented (nvml.h is not part of the toolkit's headers everywhere).
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
constexpr NvmlReturn kNvmlSuccess = 0;

std::atomic<std::int64_t> g_capacity[kMaxDevices];
std::atomic<bool> g_tried{false};

// NVML's names are no CUDA's, but the shim's own lookups all go to glibc's dlsym directly.
void* lookup_unwrapped(void* handle, const char* name) noexcept {
  return device_real_dlsym(handle, name);
}

}  // namespace

void device_nvml_read() noexcept {
  if (g_tried.exchange(true)) return;
  void* lib = optional_library_open({"libnvidia-ml.so.1"});
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*by_bus)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  if (lib == nullptr ||
      !optional_library_bind(lib, lookup_unwrapped, std::pair{"nvmlInit_v2", &init},
                             std::pair{"nvmlDeviceGetCount_v2", &count},
                             std::pair{"nvmlDeviceGetHandleByIndex_v2", &by_index},
                             std::pair{"nvmlDeviceGetMemoryInfo", &memory}))
    return;
  // Older drivers may lack these: devices are then matched by index, NVML left open.
  optional_library_bind(lib, lookup_unwrapped,
                        std::pair{"nvmlDeviceGetHandleByPciBusId_v2", &by_bus});
  optional_library_bind(lib, lookup_unwrapped, std::pair{"nvmlShutdown", &shutdown});
  if (init() != kNvmlSuccess) return;
  unsigned n = 0;
  if (count(&n) == kNvmlSuccess) {
    for (unsigned i = 0; i < n && i < static_cast<unsigned>(kMaxDevices); ++i) {
      NvmlDevice device = nullptr;
      char bus[32];
      // CUDA's order (and CUDA_VISIBLE_DEVICES) need not be NVML's: match the PCI bus.
      const bool found =
          (by_bus != nullptr && device_pci_bus_id(static_cast<int>(i), bus, sizeof bus))
              ? by_bus(bus, &device) == kNvmlSuccess
              : by_index(i, &device) == kNvmlSuccess;
      NvmlMemory m{};
      if (found && memory(device, &m) == kNvmlSuccess)
        g_capacity[i].store(static_cast<std::int64_t>(m.total), std::memory_order_relaxed);
    }
  }
  if (shutdown != nullptr) shutdown();
}

std::int64_t device_nvml_capacity(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return 0;
  return g_capacity[device].load(std::memory_order_relaxed);
}

}  // namespace memwatch::shim
