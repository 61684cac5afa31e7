// A JSON writer into a caller's fixed buffer: no allocation, no locale, no stdio, so that a
// report can be formatted inside a fatal-signal handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memwatch::shim {

class JsonBuffer {
 public:
  JsonBuffer(char* buffer, std::size_t capacity) noexcept : buf_(buffer), cap_(capacity) {}

  JsonBuffer& raw(std::string_view text) noexcept;
  JsonBuffer& string(std::string_view text) noexcept;  // quoted and escaped
  JsonBuffer& integer(std::int64_t value) noexcept;
  // Integral values print as integers; others with up to 9 significant digits.
  JsonBuffer& number(double value) noexcept;
  JsonBuffer& key(std::string_view name) noexcept;  // "name": (comma handled by the caller)

  [[nodiscard]] bool overflowed() const noexcept { return overflow_; }
  [[nodiscard]] std::string_view view() const noexcept { return {buf_, len_}; }

 private:
  void put(char c) noexcept;

  char* buf_;
  std::size_t cap_;
  std::size_t len_ = 0;
  bool overflow_ = false;
};

}  // namespace memwatch::shim
