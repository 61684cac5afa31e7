#include "reporting/report.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "device/device_count.hpp"
#include "reporting/json_buffer.hpp"

namespace memwatch::shim {

namespace {

struct SourceName {
  std::uint32_t bit;
  const char* name;
};
constexpr SourceName kSourceNames[] = {
    {kSourceCupti, "cupti"}, {kSourceRuntime, "runtime-hooks"}, {kSourceDriver, "driver-hooks"}};

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

constexpr std::size_t kPathCapacity = 4200;
constexpr int kMaxLinks = 8;       // symbolic links followed from MEMWATCH_REPORT, as ELOOP
constexpr int kFifoWaitMs = 1000;  // how long a full FIFO may hold the program at its end

// Appends the C string `s` to out[n...]; returns the new length.
std::size_t append_text(char* out, std::size_t n, std::size_t cap, const char* s) {
  while (*s != '\0' && n + 1 < cap) out[n++] = *s++;
  return n;
}

// `path_template` with %p made `pid`, into out[kPathCapacity].
void expand_pid(const char* path_template, int pid, char* out) {
  std::size_t n = 0;
  for (const char* p = path_template; *p != '\0' && n + 1 < kPathCapacity; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      n = append_int(out, n, kPathCapacity, pid);
      ++p;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = '\0';
}

// The length of the folder part of `path`, its last '/' included (0: the current folder).
std::size_t folder_length(const char* path) {
  std::size_t length = 0;
  for (std::size_t i = 0; path[i] != '\0'; ++i)
    if (path[i] == '/') length = i + 1;
  return length;
}

// The kernel's protected_symlinks rule, applied here too since the links are read by hand: in a
// sticky folder others may write in (/tmp), only a link of this user's or of the folder's owner
// is followed, so that another user's planted link cannot aim root's report at /etc/passwd.
bool may_follow(char* link_path, const struct stat& link) {
  // The folder is named by cutting the path short for a moment: no second path on the stack,
  // which may be a signal's small alternate stack.
  const std::size_t length = folder_length(link_path);
  const char kept = link_path[length];
  link_path[length] = '\0';
  struct stat dir {};
  const bool found = stat(length == 0 ? "." : link_path, &dir) == 0;
  link_path[length] = kept;
  if (!found) return false;
  const bool shared_sticky = (dir.st_mode & S_ISVTX) != 0 && (dir.st_mode & S_IWOTH) != 0;
  return !shared_sticky || link.st_uid == geteuid() || link.st_uid == dir.st_uid;
}

// Resolves symbolic links at `path` in place, so that the report lands on what the link names
// rather than replacing the link; `st` is then the lstat of the end (st_mode 0: no file there
// yet). The target itself is then written as any path is, atomically when it is a regular file.
const char* follow_links(char* path, struct stat& st) {
  for (int hops = 0;; ++hops) {
    if (lstat(path, &st) != 0) {
      st.st_mode = 0;
      return errno == ENOENT ? nullptr : "its folder cannot be reached";
    }
    if (!S_ISLNK(st.st_mode)) return nullptr;
    if (hops == kMaxLinks) return "too many symbolic links";
    if (!may_follow(path, st)) return "it is another user's symbolic link in a shared folder";
    char target[kPathCapacity];
    const ssize_t len = readlink(path, target, sizeof target - 1);
    if (len <= 0) return "its symbolic link cannot be read";
    target[len] = '\0';
    // A relative target is relative to the link's own folder.
    const std::size_t keep = target[0] == '/' ? 0 : folder_length(path);
    const std::size_t n = append_text(path, keep, kPathCapacity, target);
    if (n + 1 >= kPathCapacity) return "its symbolic link names too long a path";
    path[n] = '\0';
  }
}

// Writes all of `json`; a descriptor opened O_NONBLOCK (a FIFO) waits at most kFifoWaitMs for
// its reader to make room, so that a reader that stopped reading cannot hang the program.
bool write_all(int fd, std::string_view json) {
  std::size_t done = 0;
  while (done < json.size()) {
    const ssize_t w = write(fd, json.data() + done, json.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      pollfd item{fd, POLLOUT, 0};
      if (poll(&item, 1, kFifoWaitMs) > 0) continue;
      return false;
    }
    if (w <= 0) return false;
    done += static_cast<std::size_t>(w);
  }
  return true;
}

// A new path or a regular file: a temporary beside it, renamed over it, so that a reader never
// sees half a report.
const char* replace_atomically(const char* path, int pid, std::string_view json) {
  char tmp[kPathCapacity + 32];
  std::size_t t = append_text(tmp, 0, sizeof tmp, path);
  t = append_text(tmp, t, sizeof tmp, ".tmp.");
  t = append_int(tmp, t, sizeof tmp, pid);
  tmp[t] = '\0';
  unlink(tmp);  // a stale one from an earlier process of this pid
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return "a file cannot be created beside it";
  const bool written = write_all(fd, json);
  if (close(fd) == 0 && written && rename(tmp, path) == 0) return nullptr;
  unlink(tmp);
  return "the report could not be written beside it and renamed onto it";
}

// A character device (/dev/null, a terminal) or a FIFO: written where it is, never replaced.
// O_NONBLOCK: a FIFO without a reader is refused at once rather than holding the program.
const char* write_in_place(const char* path, std::string_view json) {
  const int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENXIO ? "no one reads the FIFO" : "it cannot be opened";
  struct stat st {};
  // Opened without O_CREAT, so only what was judged can be written: check it still is.
  const bool same_kind = fstat(fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
  const bool written = same_kind && write_all(fd, json);
  close(fd);
  return written ? nullptr : "it could not be written";
}

// "devices": [...]: each device used, its figures and capacity.
void devices_of(JsonBuffer& j, const CounterSnapshot& s, const ReportFacts& f) {
  j.raw(",").key("devices").raw("[");
  bool first = true;
  for (int i = 0; i < kMaxDevices; ++i) {
    if (s.device_peak[i] == 0 && s.device_live[i] == 0) continue;
    if (!first) j.raw(",");
    first = false;
    j.raw("{").key("index").integer(i);
    j.raw(",").key("peak_bytes").integer(s.device_peak[i]);
    j.raw(",").key("live_bytes").integer(s.device_live[i]);
    if (f.device_capacity_bytes[i] > 0)
      j.raw(",").key("capacity_bytes").integer(f.device_capacity_bytes[i]);
    j.raw("}");
  }
  j.raw("]");
}

// "members": [...]: each process of the job, as it joined and with its own figures.
void members_of(JsonBuffer& j, const protocol::JobBlock& job) {
  j.raw(",").key("members").raw("[");
  const int used = job.slots_used.load(std::memory_order_relaxed);
  const char* separator = "";
  for (int i = 0; i < used && i < protocol::kMaxJobSlots; ++i) {
    const protocol::JobSlot& slot = job.slots[i];
    const int pid = slot.pid.load(std::memory_order_acquire);
    if (pid == 0) continue;
    const auto state = static_cast<protocol::MemberState>(slot.state.load());
    j.raw(separator).raw("{").key("pid").integer(pid);
    separator = ",";
    j.raw(",").key("parent").integer(slot.parent);
    j.raw(",").key("joined").string(protocol::joined_by_name(slot.joined_by));
    j.raw(",").key("name").string(slot.name);
    j.raw(",").key("state").string(protocol::member_state_name(state));
    j.raw(",").key("inherited_bytes").integer(slot.inherited_bytes);
    j.raw(",").key("host_peak_bytes").integer(slot.host_peak.load());
    j.raw(",").key("device_peak_bytes").integer(slot.device_peak.load());
    j.raw("}");
  }
  j.raw("]");
}

// "job": {...}: the job's counted figures under their names (as the daemon stores a run's), its
// devices and its members.
void job_of(JsonBuffer& j, const protocol::JobBlock& job, const ReportFacts& f) {
  const CounterSnapshot s = counters_snapshot(job.counters);
  j.raw(",").key("job").raw("{").key("root_pid").integer(job.root_pid);
  protocol::for_each_figure(s, [&](const protocol::Figure& figure, std::int64_t value) {
    if (figure.source == protocol::FigureSource::counter)
      j.raw(",").key(figure.name).integer(value);
  });
  devices_of(j, s, f);
  members_of(j, job);
  j.raw("}");
}

}  // namespace

std::string_view report_format(const ReportFacts& f, char* buf, std::size_t capacity) noexcept {
  const Config& c = *f.config;
  CounterSnapshot s = f.counters;
  s.rss_hwm = f.rss_hwm_bytes;
  JsonBuffer j(buf, capacity);
  // Every figure (figures.hpp) under its key, in its group: "host", or the top level.
  auto figures_of = [&](std::string_view group) {
    protocol::for_each_figure(s, [&](const protocol::Figure& figure, std::int64_t value) {
      if (figure.report_group == group) j.raw(",").key(figure.report_key).integer(value);
    });
  };
  j.raw("{").key("schema").string("memwatch.report/1");
  j.raw(",").key("pid").integer(f.pid);
  j.raw(",").key("workload").string(c.workload);
  if (c.scheduler_job[0] != '\0') j.raw(",").key("scheduler_job").string(c.scheduler_job);
  j.raw(",").key("params").raw("{");
  for (int i = 0; i < c.param_count; ++i) {
    if (i > 0) j.raw(",");
    j.key(c.params[i].name).number(c.params[i].value);
  }
  j.raw("}");
  j.raw(",").key("host").raw("{");
  j.key("error_bound_bytes").integer(f.error_bound_bytes);
  j.raw(",").key("capacity_bytes").integer(f.host_capacity_bytes);
  figures_of("host");
  j.raw("}");
  figures_of("");
  devices_of(j, s, f);
  if (f.job != nullptr) job_of(j, *f.job, f);
  j.raw(",").key("sources").raw("[");
  const char* separator = "";
  for (const auto& [bit, name] : kSourceNames) {
    if ((f.device_sources & bit) == 0) continue;
    j.raw(separator).string(name);
    separator = ",";
  }
  j.raw("]");
  j.raw(",").key("allocator").string(c.allocator == Allocator::jemalloc ? "jemalloc" : "system");
  j.raw(",").key("elapsed_s").number(f.elapsed_s);
  j.raw(",").key("exit").raw("{").key("cause").string(protocol::exit_cause_name(f.cause));
  if (f.cause == ExitCause::signal) j.raw(",").key("signal").integer(f.detail);
  if (f.cause == ExitCause::underscore_exit) j.raw(",").key("status").integer(f.detail);
  j.raw("}}\n");
  if (j.overflowed()) return {};
  return j.view();
}

const char* report_write(const char* path_template, int pid, std::string_view json) noexcept {
  const int saved_errno = errno;
  char path[kPathCapacity];
  expand_pid(path_template, pid, path);
  struct stat st {};
  const char* why = follow_links(path, st);
  if (why == nullptr) {
    if (st.st_mode == 0 || S_ISREG(st.st_mode))
      why = replace_atomically(path, pid, json);
    else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
      why = write_in_place(path, json);
    else if (S_ISDIR(st.st_mode))
      why = "it is a directory";
    else
      why = "it is not a regular file, a character device or a FIFO";
  }
  errno = saved_errno;
  return why;
}

}  // namespace memwatch::shim
