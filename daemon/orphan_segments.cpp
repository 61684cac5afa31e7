#include "orphan_segments.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <optional>
#include <string_view>

namespace memwatch::daemon {

namespace {

// The pid of a segment's name (protocol/segment.hpp: memwatch.<pid>, memwatch.job.<pid>).
std::optional<int> segment_pid(std::string_view name) {
  for (std::string_view prefix : {"memwatch.job.", "memwatch."}) {
    if (!name.starts_with(prefix)) continue;
    const std::string_view digits = name.substr(prefix.size());
    int pid = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (error == std::errc() && end == digits.data() + digits.size() && pid > 0) return pid;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::size_t OrphanSweep::sweep(const std::set<int>& keep) {
  std::size_t removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    const std::string name = entry.path().filename().string();
    const std::optional<int> pid = segment_pid(name);
    struct stat st {};
    if (!pid || keep.contains(*pid) || lstat(entry.path().c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode) || st.st_uid != geteuid() || !process_gone(*pid) || !gone_.again(name))
      continue;
    std::error_code ignored;
    removed += std::filesystem::remove(entry.path(), ignored);
  }
  gone_.next_round();
  return removed;
}

}  // namespace memwatch::daemon
