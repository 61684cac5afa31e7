// The sweep's grid: its axes (`--grid NAME=V1,V2,...`), its points, and the `{NAME}` placeholders
// filled in from a point, in the command's words and in a config template alike.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace memwatch::cli {

struct Axis {
  std::string name;
  std::vector<std::string> values;  // as the user wrote them: they go into the CSV unchanged
};

// One parameter point: a value index per axis.
using Point = std::vector<std::size_t>;

Axis parse_axis(std::string_view spec);
bool is_identifier(std::string_view s);
std::vector<std::string> split(std::string_view text, char sep);

// `text` with every `key` replaced by `value`.
std::string replace_all(std::string text, std::string_view key, std::string_view value);
// `text` with every `{NAME}` of an axis replaced by the point's value; other braces stay.
std::string substitute(std::string text, const std::vector<Axis>& axes, const Point& point);
// A `{name}` in the command that no axis (nor `extra`, such as "config") defines: a typo that
// would run the wrong command every time, refused before anything runs.
void check_placeholders(const std::vector<std::string>& command, const std::vector<Axis>& axes,
                        const std::vector<std::string>& extra);

// The same number written two ways (4 and 4.0) is the same point when resuming.
std::string canonical_number(std::string_view text);
std::string point_key(const std::vector<Axis>& axes, const Point& point);
std::string describe(const std::vector<Axis>& axes, const Point& point, char sep);

// Every point, the first axis varying slowest, each as often as it still needs to reach `repeat`
// rows given `done` (rows already written, by point_key); `already` counts those kept.
std::vector<Point> pending_points(const std::vector<Axis>& axes, std::size_t repeat,
                                  std::map<std::string, std::size_t> done, std::size_t& already);

}  // namespace memwatch::cli
