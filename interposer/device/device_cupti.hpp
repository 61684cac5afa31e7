// CUPTI as a counting source (device_cupti.cpp). Started from the reporter thread, once the
// program has brought CUDA; never from a hook.
#pragma once

namespace memwatch::shim {

// `setting` is MEMWATCH_CUPTI: null or "auto" (libcupti from the library path), "off", or the
// path of a libcupti. Tried once; on any failure the hooks go on counting.
void device_cupti_start(const char* setting) noexcept;
bool device_cupti_counting() noexcept;

}  // namespace memwatch::shim
