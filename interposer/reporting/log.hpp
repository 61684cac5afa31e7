// The shim's only output besides its report: one line per message on stderr, written with a
// single write(2) (no stdio: the program's buffers are its own), at most kMaxMessages a process.
#pragma once

namespace memwatch::shim {

inline constexpr int kMaxMessages = 16;

// printf-style; the line gets the "memwatch: " prefix and a newline.
void log_line(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace memwatch::shim
