// Device capacities from NVML (libnvidia-ml, dlopen'ed on the reporter thread once CUDA is in
// use). Never cudaMemGetInfo: it would create a context, hundreds of MiB on every device.
#pragma once

#include <cstdint>

namespace memwatch::shim {

// Reads each CUDA device's total memory once; devices are matched by PCI bus id where the
// driver tells it, else by index. Quiet when NVML is absent.
void device_nvml_read() noexcept;
// Bytes, or 0 when unknown.
std::int64_t device_nvml_capacity(int device) noexcept;

}  // namespace memwatch::shim
