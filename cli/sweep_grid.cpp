#include "sweep_grid.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "args.hpp"

namespace memwatch::cli {

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  while (true) {
    auto at = text.find(sep);
    parts.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

Axis parse_axis(std::string_view spec) {
  auto eq = spec.find('=');
  if (eq == std::string_view::npos)
    throw UsageError("--grid expects NAME=V1,V2,..., got '" + std::string(spec) + "'");
  Axis axis{std::string(spec.substr(0, eq)), split(spec.substr(eq + 1), ',')};
  if (!is_identifier(axis.name))
    throw UsageError("--grid: '" + axis.name + "' is not a parameter name (letters, digits, _)");
  for (const auto& v : axis.values) parse_number(v, "--grid " + axis.name);
  return axis;
}

std::string canonical_number(std::string_view text) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", parse_number(text, "value"));
  return buf;
}

std::string replace_all(std::string text, std::string_view key, std::string_view value) {
  for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
    text.replace(at, key.size(), value);
  return text;
}

std::string substitute(std::string text, const std::vector<Axis>& axes, const Point& point) {
  for (std::size_t a = 0; a < axes.size(); ++a)
    text = replace_all(std::move(text), "{" + axes[a].name + "}", axes[a].values[point[a]]);
  return text;
}

void check_placeholders(const std::vector<std::string>& command, const std::vector<Axis>& axes,
                        const std::vector<std::string>& extra) {
  const Point first(axes.size(), 0);
  for (const auto& word : command) {
    const std::string done = substitute(word, axes, first);
    for (auto open = done.find('{'); open != std::string::npos; open = done.find('{', open + 1)) {
      auto close = done.find('}', open);
      if (close == std::string::npos) break;
      const std::string name = done.substr(open + 1, close - open - 1);
      if (is_identifier(name) && std::find(extra.begin(), extra.end(), name) == extra.end())
        throw UsageError("the command uses {" + name + "}, which no --grid defines" +
                         (name == "config" ? " (give --config-template FILE)" : ""));
    }
  }
}

std::string point_key(const std::vector<Axis>& axes, const Point& point) {
  std::string key;
  for (std::size_t a = 0; a < axes.size(); ++a)
    key += canonical_number(axes[a].values[point[a]]) + ",";
  return key;
}

std::string describe(const std::vector<Axis>& axes, const Point& point, char sep) {
  std::string s;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (a) s += sep;
    s += axes[a].name + "=" + axes[a].values[point[a]];
  }
  return s;
}

std::vector<Point> pending_points(const std::vector<Axis>& axes, std::size_t repeat,
                                  std::map<std::string, std::size_t> done, std::size_t& already) {
  std::vector<Point> pending;
  already = 0;
  Point point(axes.size(), 0);
  while (true) {
    auto have = done[point_key(axes, point)];
    already += std::min(have, repeat);
    for (std::size_t r = have; r < repeat; ++r) pending.push_back(point);
    std::size_t a = axes.size();
    while (a > 0 && ++point[a - 1] == axes[a - 1].values.size()) point[--a] = 0;
    if (a == 0) break;
  }
  return pending;
}

}  // namespace memwatch::cli
