#include "reporting/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>

namespace memwatch::shim {

namespace {
std::atomic<int> g_messages{0};
}

void log_line(const char* format, ...) noexcept {
  if (g_messages.fetch_add(1, std::memory_order_relaxed) >= kMaxMessages) return;
  const int saved_errno = errno;
  char line[1024] = "memwatch: ";
  constexpr int prefix = 10;
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line + prefix, sizeof line - prefix - 1, format, args);
  va_end(args);
  if (n < 0) n = 0;
  std::size_t len =
      prefix + std::min<std::size_t>(static_cast<std::size_t>(n), sizeof line - prefix - 2);
  line[len++] = '\n';
  [[maybe_unused]] ssize_t w = write(STDERR_FILENO, line, len);
  errno = saved_errno;
}

}  // namespace memwatch::shim
