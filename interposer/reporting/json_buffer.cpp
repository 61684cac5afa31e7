#include "reporting/json_buffer.hpp"

#include <cmath>
#include <cstdint>

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

namespace {

// The length of the well-formed UTF-8 sequence of a code point starting at text[i] that is not
// ASCII, or 0: strict readers (nlohmann's among them) refuse a document holding anything else,
// and a workload named after argv[0] may hold any bytes.
std::size_t utf8_sequence(std::string_view text, std::size_t i) noexcept {
  const auto lead = static_cast<unsigned char>(text[i]);
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF)
    length = 2, code = lead & 0x1Fu;
  else if (lead >= 0xE0 && lead <= 0xEF)
    length = 3, code = lead & 0x0Fu;
  else if (lead >= 0xF0 && lead <= 0xF4)
    length = 4, code = lead & 0x07u;
  if (length == 0 || i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0u) != 0x80u) return 0;
    code = code << 6 | (next & 0x3Fu);
  }
  const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  return overlong || surrogate || code > 0x10FFFF ? 0 : length;
}

}  // namespace

JsonBuffer& JsonBuffer::string(std::string_view text) noexcept {
  static constexpr char hex[] = "0123456789abcdef";
  put('"');
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      put('\\');
      put(c);
    } else if (u < 0x20) {
      raw("\\u00");
      put(hex[u >> 4]);
      put(hex[u & 15]);
    } else if (u < 0x80) {
      put(c);
    } else if (const std::size_t length = utf8_sequence(text, i); length > 0) {
      raw(text.substr(i, length));
      i += length - 1;
    } else {
      raw("\\ufffd");  // a byte that is not UTF-8: the replacement character
    }
  }
  put('"');
  return *this;
}

JsonBuffer& JsonBuffer::integer(std::int64_t value) noexcept {
  char digits[24];
  int n = 0;
  // Negate in unsigned arithmetic so INT64_MIN prints too.
  std::uint64_t magnitude =
      value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
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
  // 10^exponent is itself subnormal or zero below 1e-308: bring such a value up first.
  const double lifted = exponent < -290 ? value * 1e290 : value;
  const int lifted_exponent = exponent < -290 ? exponent + 290 : exponent;
  auto scaled =
      static_cast<std::int64_t>(std::llround(lifted / std::pow(10.0, lifted_exponent) * 1e8));
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
