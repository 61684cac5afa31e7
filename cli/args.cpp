#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace memwatch::cli {

namespace {
bool contains(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}
}  // namespace

Args::Args(std::span<char* const> argv, std::vector<std::string_view> valued,
           std::vector<std::string_view> flags) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string_view word = argv[i];
    if (word == "--") {
      rest_.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      return;
    }
    if (!word.starts_with("--")) {
      positional_.emplace_back(word);
      continue;
    }
    std::string_view name = word.substr(2);
    std::optional<std::string_view> inline_value;
    if (auto eq = name.find('='); eq != std::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (contains(flags, name) && !inline_value) {
      flags_.emplace_back(name);
    } else if (contains(valued, name)) {
      if (inline_value) {
        options_.emplace_back(name, *inline_value);
      } else if (i + 1 < argv.size()) {
        options_.emplace_back(name, argv[++i]);
      } else {
        throw UsageError("option --" + std::string(name) + " needs a value");
      }
    } else {
      throw UsageError("unknown option --" + std::string(name));
    }
  }
}

std::optional<std::string> Args::value(std::string_view name) const {
  std::optional<std::string> last;
  for (const auto& [key, v] : options_)
    if (key == name) last = v;
  return last;
}

std::vector<std::string> Args::values(std::string_view name) const {
  std::vector<std::string> all;
  for (const auto& [key, v] : options_)
    if (key == name) all.push_back(v);
  return all;
}

std::string Args::required(std::string_view name) const {
  if (auto v = value(name)) return *v;
  throw UsageError("missing required option --" + std::string(name));
}

bool Args::flag(std::string_view name) const {
  return std::find(flags_.begin(), flags_.end(), name) != flags_.end();
}

double parse_number(std::string_view text, std::string_view what) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    throw UsageError(std::string(what) + ": expected a finite number, got '" + std::string(text) +
                     "'");
  return v;
}

std::size_t parse_count(std::string_view text, std::string_view what, std::size_t lo,
                        std::size_t hi) {
  std::size_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    throw UsageError(std::string(what) + ": expected a whole number from " + std::to_string(lo) +
                     " to " + std::to_string(hi) + ", got '" + std::string(text) + "'");
  return v;
}

}  // namespace memwatch::cli
