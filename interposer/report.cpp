#include "report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "json_buffer.hpp"

namespace memwatch::shim {

namespace {

const char* cause_name(ExitCause cause) {
  switch (cause) {
    case ExitCause::exit: return "exit";
    case ExitCause::underscore_exit: return "_exit";
    case ExitCause::signal: return "signal";
  }
  return "exit";
}

// Appends `value` in decimal to out[n...]; returns the new length.
std::size_t append_int(char* out, std::size_t n, std::size_t cap, long value) {
  char digits[24];
  int d = 0;
  do {
    digits[d++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && d < 23);
  while (d > 0 && n + 1 < cap) out[n++] = digits[--d];
  return n;
}

}  // namespace

std::string_view report_format(const ReportFacts& f, char* buf, std::size_t capacity) noexcept {
  const Config& c = *f.config;
  const CounterSnapshot& s = f.counters;
  JsonBuffer j(buf, capacity);
  j.raw("{").key("schema").string("memwatch.report/1");
  j.raw(",").key("pid").integer(f.pid);
  j.raw(",").key("workload").string(c.workload);
  j.raw(",").key("params").raw("{");
  for (int i = 0; i < c.param_count; ++i) {
    if (i > 0) j.raw(",");
    j.key(c.params[i].name).number(c.params[i].value);
  }
  j.raw("}");
  j.raw(",").key("host").raw("{");
  j.key("peak_bytes").integer(s.host_peak);
  j.raw(",").key("heap_peak_bytes").integer(s.heap_peak);
  j.raw(",").key("mmap_peak_bytes").integer(s.mmap_peak);
  j.raw(",").key("live_bytes").integer(s.host_live);
  j.raw(",").key("heap_live_bytes").integer(s.heap_live);
  j.raw(",").key("mmap_live_bytes").integer(s.mmap_live);
  j.raw(",").key("error_bound_bytes").integer(f.error_bound_bytes);
  j.raw(",").key("capacity_bytes").integer(f.host_capacity_bytes);
  j.raw("}");
  j.raw(",").key("device_peak_bytes").integer(s.device_sum_peak);
  j.raw(",").key("devices").raw("[");
  bool first = true;
  for (int i = 0; i < kMaxDevices; ++i) {
    if (s.device_peak[i] == 0 && s.device_live[i] == 0) continue;
    if (!first) j.raw(",");
    first = false;
    j.raw("{").key("index").integer(i);
    j.raw(",").key("peak_bytes").integer(s.device_peak[i]);
    j.raw(",").key("live_bytes").integer(s.device_live[i]);
    j.raw("}");
  }
  j.raw("]");
  j.raw(",").key("pinned_peak_bytes").integer(s.pinned_peak);
  j.raw(",").key("managed_peak_bytes").integer(s.managed_peak);
  j.raw(",").key("rss_hwm_bytes").integer(f.rss_hwm_bytes);
  j.raw(",").key("threads_peak").integer(s.threads_peak);
  j.raw(",").key("allocator").string(c.allocator == Allocator::jemalloc ? "jemalloc" : "system");
  j.raw(",").key("elapsed_s").number(f.elapsed_s);
  j.raw(",").key("exit").raw("{").key("cause").string(cause_name(f.cause));
  if (f.cause == ExitCause::signal) j.raw(",").key("signal").integer(f.detail);
  if (f.cause == ExitCause::underscore_exit) j.raw(",").key("status").integer(f.detail);
  j.raw("}}\n");
  if (j.overflowed()) return {};
  return j.view();
}

bool report_write(const char* path_template, int pid, std::string_view json) noexcept {
  const int saved_errno = errno;
  char path[4200];
  std::size_t n = 0;
  for (const char* p = path_template; *p != '\0' && n + 1 < sizeof path; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      n = append_int(path, n, sizeof path, pid);
      ++p;
    } else {
      path[n++] = *p;
    }
  }
  path[n] = '\0';
  char tmp[4300];
  std::size_t t = 0;
  for (std::size_t i = 0; i < n && t + 1 < sizeof tmp; ++i) tmp[t++] = path[i];
  for (const char* s = ".tmp."; *s != '\0' && t + 1 < sizeof tmp; ++s) tmp[t++] = *s;
  t = append_int(tmp, t, sizeof tmp, pid);
  tmp[t] = '\0';

  bool ok = false;
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    std::size_t done = 0;
    while (done < json.size()) {
      const ssize_t w = write(fd, json.data() + done, json.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    ok = close(fd) == 0 && done == json.size() && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
  }
  errno = saved_errno;
  return ok;
}

}  // namespace memwatch::shim
