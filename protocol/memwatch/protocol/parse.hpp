// Text every side reads the same way: sizes ("24GiB", "1.5G", "512MB", "1000"), names
// (workloads and parameters: letters, digits, '_', '-', '.') and a run's parameters
// ("batch=8,dim=128": the shim's MEMWATCH_PARAMS, Slurm's --memwatch-params). Allocation-free:
// the shim reads its environment with them before the program's main.
#pragma once

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace memwatch::protocol {

// The longest workload or parameter name: the shim keeps names in 64-byte fields.
inline constexpr std::size_t kMaxNameLength = 63;

inline bool valid_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

namespace parse_detail {

constexpr std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace parse_detail

// Bytes, or -1 when `text` is not a size. K/KiB = 1024, KB = 1000, and so on up to T.
inline std::int64_t parse_size(std::string_view text) noexcept {
  text = parse_detail::trim(text);
  std::size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  double number = 0;
  if (digits == 0) return -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc() || end != text.data() + digits || !std::isfinite(number)) return -1;
  const std::string_view unit = parse_detail::trim(text.substr(digits));
  struct Unit {
    std::string_view name;
    double factor;
  };
  static constexpr Unit units[] = {
      {"", 1},       {"B", 1},        {"K", 0x1p10},   {"KiB", 0x1p10}, {"KB", 1e3},
      {"M", 0x1p20}, {"MiB", 0x1p20}, {"MB", 1e6},     {"G", 0x1p30},   {"GiB", 0x1p30},
      {"GB", 1e9},   {"T", 0x1p40},   {"TiB", 0x1p40}, {"TB", 1e12},
  };
  for (const Unit& u : units) {
    if (unit == u.name) {
      const double bytes = number * u.factor;
      if (bytes > 0x1p62) return -1;
      return static_cast<std::int64_t>(std::llround(bytes));
    }
  }
  return -1;
}

// A finite number, blanks around it allowed and nothing else.
inline bool parse_finite(std::string_view text, double& out) noexcept {
  text = parse_detail::trim(text);
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(out);
}

// A parameter list is `name=number` items separated by commas; blanks around an item or its
// parts are allowed, empty items skipped.
inline constexpr std::string_view kParamListForm = "name=number[,name=number...]";

// One item of a parameter list; false when it is not name=number.
inline bool parse_param(std::string_view item, std::string_view& name, double& value) noexcept {
  const std::size_t eq = item.find('=');
  if (eq == std::string_view::npos) return false;
  name = parse_detail::trim(item.substr(0, eq));
  return valid_name(name) && parse_finite(item.substr(eq + 1), value);
}

}  // namespace memwatch::protocol
