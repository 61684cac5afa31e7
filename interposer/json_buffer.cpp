#include "json_buffer.hpp"

#include <cmath>

namespace memwatch::shim {

void JsonBuffer::put(char c) noexcept {
  if (len_ < cap_) {
    buf_[len_++] = c;
  } else {
    overflow_ = true;
  }
}

JsonBuffer& JsonBuffer::raw(std::string_view text) noexcept {
  for (char c : text) put(c);
  return *this;
}

JsonBuffer& JsonBuffer::string(std::string_view text) noexcept {
  static constexpr char hex[] = "0123456789abcdef";
  put('"');
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      put('\\');
      put(c);
    } else if (u < 0x20) {
      raw("\\u00");
      put(hex[u >> 4]);
      put(hex[u & 15]);
    } else {
      put(c);
    }
  }
  put('"');
  return *this;
}

JsonBuffer& JsonBuffer::integer(std::int64_t value) noexcept {
  char digits[24];
  int n = 0;
  // Negate in unsigned arithmetic so INT64_MIN prints too.
  std::uint64_t magnitude = value < 0 ? 0 - static_cast<std::uint64_t>(value)
                                      : static_cast<std::uint64_t>(value);
  do {
    digits[n++] = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (value < 0) put('-');
  while (n > 0) put(digits[--n]);
  return *this;
}

JsonBuffer& JsonBuffer::number(double value) noexcept {
  if (!std::isfinite(value)) return raw("null");
  if (value == std::trunc(value) && std::fabs(value) < 0x1p53)
    return integer(static_cast<std::int64_t>(value));
  if (value < 0) {
    put('-');
    value = -value;
  }
  // Nine significant digits d[0..n) with value = 0.d[0]d[1]... x 10^(exponent+1).
  int exponent = static_cast<int>(std::floor(std::log10(value)));
  auto scaled = static_cast<std::int64_t>(std::llround(value / std::pow(10.0, exponent) * 1e8));
  if (scaled >= 1000000000) {  // rounding carried into a new digit
    scaled /= 10;
    ++exponent;
  } else if (scaled < 100000000) {  // log10 rounded up at a power of ten
    scaled *= 10;
    --exponent;
  }
  char d[9];
  for (int i = 8; i >= 0; --i, scaled /= 10) d[i] = static_cast<char>('0' + scaled % 10);
  int n = 9;
  while (n > 1 && d[n - 1] == '0') --n;

  if (exponent >= 0 && exponent < 15) {  // plain: ddd.ddd
    for (int i = 0; i <= exponent; ++i) put(i < n ? d[i] : '0');
    if (n > exponent + 1) {
      put('.');
      for (int i = exponent + 1; i < n; ++i) put(d[i]);
    }
  } else if (exponent < 0 && exponent >= -5) {  // plain: 0.000ddd
    raw("0.");
    for (int i = -1; i > exponent; --i) put('0');
    for (int i = 0; i < n; ++i) put(d[i]);
  } else {  // scientific: d.ddde-x
    put(d[0]);
    if (n > 1) {
      put('.');
      for (int i = 1; i < n; ++i) put(d[i]);
    }
    put('e');
    integer(exponent);
  }
  return *this;
}

JsonBuffer& JsonBuffer::key(std::string_view name) noexcept {
  string(name);
  put(':');
  return *this;
}

}  // namespace memwatch::shim
