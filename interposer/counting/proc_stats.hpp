// Facts the kernel keeps about this process and machine. Everything here is async-signal-safe
// (open/read/close and hand parsing) so that a fatal-signal report can use it.
#pragma once

#include <cstdint>

namespace memwatch::shim {

// VmHWM of /proc/self/status in bytes (the RSS high-water mark), or -1.
std::int64_t proc_rss_hwm_bytes() noexcept;
// Host memory a job may use: the cgroup's limit (v2 memory.max, v1 limit_in_bytes) where one
// is set, else MemTotal; -1 when neither can be read.
std::int64_t proc_host_capacity_bytes() noexcept;
double proc_monotonic_s() noexcept;
double proc_unix_s() noexcept;

// Reads up to size-1 bytes of a small file into buf, NUL-terminated; returns the length or -1.
long proc_read_file(const char* path, char* buf, unsigned long size) noexcept;
// The number after `key` (e.g. "VmHWM:") in `text`, times `scale`; -1 when absent.
std::int64_t proc_find_number(const char* text, const char* key, std::int64_t scale) noexcept;

}  // namespace memwatch::shim
