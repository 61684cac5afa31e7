#include "device/device_nvml.hpp"

#include <dlfcn.h>

#include <atomic>

#include "counting/counters.hpp"
#include "device/device_hooks.hpp"

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

template <typename Fn>
Fn lookup(void* handle, const char* name) {
  return reinterpret_cast<Fn>(device_real_dlsym(handle, name));
}

}  // namespace

void device_nvml_read() noexcept {
  if (g_tried.exchange(true)) return;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return;
  auto init = lookup<NvmlReturn (*)()>(lib, "nvmlInit_v2");
  auto shutdown = lookup<NvmlReturn (*)()>(lib, "nvmlShutdown");
  auto count = lookup<NvmlReturn (*)(unsigned*)>(lib, "nvmlDeviceGetCount_v2");
  auto by_index =
      lookup<NvmlReturn (*)(unsigned, NvmlDevice*)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  auto by_bus =
      lookup<NvmlReturn (*)(const char*, NvmlDevice*)>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  auto memory = lookup<NvmlReturn (*)(NvmlDevice, NvmlMemory*)>(lib, "nvmlDeviceGetMemoryInfo");
  if (init == nullptr || count == nullptr || by_index == nullptr || memory == nullptr) return;
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
