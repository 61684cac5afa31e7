#include "counting/proc_stats.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace memwatch::shim {

long proc_read_file(const char* path, char* buf, unsigned long size) noexcept {
  const int saved_errno = errno;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    errno = saved_errno;
    return -1;
  }
  unsigned long used = 0;
  while (used + 1 < size) {
    const ssize_t n = read(fd, buf + used, size - 1 - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<unsigned long>(n);
  }
  close(fd);
  buf[used] = '\0';
  errno = saved_errno;
  return static_cast<long>(used);
}

std::int64_t proc_find_number(const char* text, const char* key, std::int64_t scale) noexcept {
  const char* at = std::strstr(text, key);
  if (at == nullptr) return -1;
  at += std::strlen(key);
  while (*at == ' ' || *at == '\t') ++at;
  if (*at < '0' || *at > '9') return -1;
  std::int64_t value = 0;
  while (*at >= '0' && *at <= '9') value = value * 10 + (*at++ - '0');
  return value * scale;
}

std::int64_t proc_rss_hwm_bytes() noexcept {
  char buf[4096];
  if (proc_read_file("/proc/self/status", buf, sizeof buf) < 0) return -1;
  return proc_find_number(buf, "VmHWM:", 1024);
}

namespace {

// The cgroup v2 path of this process ("0::/user.slice/..."), into `path`; false if none.
bool cgroup_v2_path(char* path, unsigned long size) noexcept {
  char buf[1024];
  if (proc_read_file("/proc/self/cgroup", buf, sizeof buf) < 0) return false;
  const char* line = std::strstr(buf, "0::");
  if (line == nullptr) return false;
  line += 3;
  const char* end = std::strchr(line, '\n');
  const unsigned long n = end ? static_cast<unsigned long>(end - line) : std::strlen(line);
  constexpr char root[] = "/sys/fs/cgroup";
  if (sizeof root + n + 16 > size) return false;
  std::memcpy(path, root, sizeof root - 1);
  std::memcpy(path + sizeof root - 1, line, n);
  path[sizeof root - 1 + n] = '\0';
  return true;
}

std::int64_t cgroup_limit_bytes() noexcept {
  char path[1200];
  char buf[64];
  if (cgroup_v2_path(path, sizeof path)) {
    std::strcat(path, "/memory.max");
    if (proc_read_file(path, buf, sizeof buf) > 0 && buf[0] >= '0' && buf[0] <= '9')
      return proc_find_number(buf, "", 1);
  }
  if (proc_read_file("/sys/fs/cgroup/memory/memory.limit_in_bytes", buf, sizeof buf) > 0)
    return proc_find_number(buf, "", 1);
  return -1;
}

}  // namespace

std::int64_t proc_host_capacity_bytes() noexcept {
  char buf[2048];
  std::int64_t total = -1;
  if (proc_read_file("/proc/meminfo", buf, sizeof buf) > 0)
    total = proc_find_number(buf, "MemTotal:", 1024);
  const std::int64_t limit = cgroup_limit_bytes();
  // v1 reports "no limit" as a huge number; anything above MemTotal is no limit in effect.
  if (limit > 0 && (total < 0 || limit < total)) return limit;
  return total;
}

double proc_monotonic_s() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double proc_unix_s() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace memwatch::shim
