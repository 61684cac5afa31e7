#include "memwatch/model/table_parse.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "memwatch/protocol/figures.hpp"
#include "memwatch/protocol/wire.hpp"

namespace memwatch::model {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<double> to_number(std::string_view s) {
  double v = 0;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

struct Line {
  std::size_t number;
  std::string_view text;
};

// Non-blank lines that are not '#' comments, with their 1-based numbers.
std::vector<Line> content_lines(std::string_view text) {
  std::vector<Line> lines;
  std::size_t number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    line = trim(line);
    if (!line.empty() && line.front() != '#') lines.push_back({number, line});
  }
  return lines;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  while (true) {
    const std::size_t comma = line.find(',');
    fields.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  return fields;
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void check_enough_runs(const Dataset& d, std::size_t last_line) {
  if (d.rows.size() <= d.params.size())
    throw ParseError(last_line, "only " + std::to_string(d.rows.size()) + " usable runs for " +
                                    std::to_string(d.params.size()) +
                                    " parameters: need more runs than parameters");
}

void check_target(double y, std::size_t line, const std::string& name) {
  if (!(y > 0))
    throw ParseError(line, "target '" + name + "' must be positive, got " + std::to_string(y));
}

// A value or, as Extra-P writes repeated measurements, a list of them.
std::vector<double> values_of(const nlohmann::json& value, std::size_t line) {
  auto number = [&](const nlohmann::json& v) {
    if (!v.is_number()) throw ParseError(line, "non-number " + v.dump() + " in \"value\"");
    return v.get<double>();
  };
  if (!value.is_array()) return {number(value)};
  if (value.empty()) throw ParseError(line, "empty list in \"value\"");
  std::vector<double> out;
  for (const auto& v : value) out.push_back(number(v));
  return out;
}

// Repetitions of a memory peak agree but for the odd outlier (a first run warming a cache, a
// late allocator decision); the median ignores one outlier in three, the mean would follow it.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

const std::vector<std::string>& measurement_columns() {
  static const std::vector<std::string> columns = protocol::sweep_measure_columns();
  return columns;
}

namespace {

struct CsvHeader {
  std::size_t line;
  std::vector<std::string> names;

  std::size_t column(const std::string& name) const {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) throw ParseError(line, "no column '" + name + "' in the header");
    return static_cast<std::size_t>(it - names.begin());
  }
};

CsvHeader read_header(const Line& first) {
  CsvHeader header{first.number, {}};
  for (auto f : split_fields(first.text)) {
    if (f.empty()) throw ParseError(header.line, "empty column name in header");
    if (contains(header.names, f))
      throw ParseError(header.line, "duplicate column '" + std::string(f) + "'");
    header.names.emplace_back(f);
  }
  return header;
}

// The parameters: those asked for, else every column that is neither the target nor a
// measurement.
std::vector<std::string> parameter_names(const CsvHeader& header, const std::string& target,
                                         const TableOptions& options) {
  std::vector<std::string> names = options.params;
  if (names.empty())
    for (const auto& h : header.names)
      if (h != target && !contains(measurement_columns(), h)) names.push_back(h);
  if (names.empty()) throw ParseError(header.line, "no parameter columns besides the target");
  for (const auto& p : names)
    if (p == target)
      throw ParseError(header.line, "column '" + p + "' is both parameter and target");
  return names;
}

using CsvRow = std::pair<std::size_t, std::vector<std::string_view>>;  // line, fields

// The rows of runs that ended well: each checked for its width; a run whose exit_status is not
// 0 is left out with a note.
std::vector<CsvRow> finished_rows(const std::vector<Line>& lines, const CsvHeader& header,
                                  Dataset& d) {
  const bool has_exit = contains(header.names, "exit_status");
  const std::size_t exit_col = has_exit ? header.column("exit_status") : 0;
  std::vector<CsvRow> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto fields = split_fields(lines[i].text);
    if (fields.size() != header.names.size())
      throw ParseError(lines[i].number, "ragged row: " + std::to_string(fields.size()) +
                                            " fields, the header has " +
                                            std::to_string(header.names.size()));
    if (has_exit) {
      auto status = to_number(fields[exit_col]);
      if (!status)
        throw ParseError(lines[i].number, "non-number '" + std::string(fields[exit_col]) +
                                              "' in column 'exit_status'");
      if (*status != 0) {
        d.notes.push_back("line " + std::to_string(lines[i].number) + ": skipped, exit_status " +
                          std::string(fields[exit_col]));
        continue;
      }
    }
    rows.emplace_back(lines[i].number, std::move(fields));
  }
  return rows;
}

// The peak a sweep is about when none is named: the device's where every run used a device (a
// GPU trainer's host peak is its data loading, not what runs out), else the host's, else the
// last column.
std::string default_target(const CsvHeader& header, const std::vector<CsvRow>& rows) {
  using protocol::kDevicePeakTarget, protocol::kHostPeakTarget;
  if (contains(header.names, kDevicePeakTarget) && !rows.empty()) {
    const std::size_t col = header.column(kDevicePeakTarget);
    if (std::all_of(rows.begin(), rows.end(), [col](const CsvRow& row) {
          auto v = to_number(row.second[col]);
          return v && *v > 0;
        }))
      return kDevicePeakTarget;
  }
  return contains(header.names, kHostPeakTarget) ? kHostPeakTarget : header.names.back();
}

// A parameter column is categorical when none of its values is a number; a column mixing
// numbers and words is an error at its first word.
bool is_categorical(const std::vector<CsvRow>& rows, std::size_t col, const std::string& name) {
  std::optional<std::size_t> first_word;
  bool any_number = false;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (to_number(rows[r].second[col]))
      any_number = true;
    else if (!first_word)
      first_word = r;
  }
  if (first_word && any_number) {
    const auto& [line, fields] = rows[*first_word];
    const std::string_view v = fields[col];
    throw ParseError(line, v.empty()
                               ? "empty value in column '" + name + "'"
                               : "non-number '" + std::string(v) + "' in column '" + name + "'");
  }
  return first_word.has_value();
}

}  // namespace

Dataset parse_csv(std::string_view text, const TableOptions& options) {
  const auto lines = content_lines(text);
  if (lines.empty()) throw ParseError(1, "empty file: expected a header line");
  const CsvHeader header = read_header(lines.front());

  Dataset d;
  const std::vector<CsvRow> rows = finished_rows(lines, header, d);
  d.target = options.target.empty() ? default_target(header, rows) : options.target;
  const std::size_t target_col = header.column(d.target);
  const std::vector<std::string> param_names = parameter_names(header, d.target, options);
  std::vector<std::size_t> param_cols;
  for (const auto& p : param_names) param_cols.push_back(header.column(p));

  std::vector<bool> categorical;
  for (std::size_t p = 0; p < param_cols.size(); ++p) {
    categorical.push_back(is_categorical(rows, param_cols[p], param_names[p]));
    (categorical[p] ? d.categories : d.params).push_back(param_names[p]);
  }

  for (const auto& [line, fields] : rows) {
    Dataset::Row row;
    row.line = line;
    for (std::size_t p = 0; p < param_cols.size(); ++p) {
      const std::string_view v = fields[param_cols[p]];
      if (categorical[p])
        row.labels.emplace_back(v);
      else
        row.x.push_back(*to_number(v));
    }
    auto y = to_number(fields[target_col]);
    if (!y)
      throw ParseError(line, "non-number '" + std::string(fields[target_col]) +
                                 "' in target column '" + d.target + "'");
    check_target(*y, line, d.target);
    row.y = *y;
    d.rows.push_back(std::move(row));
  }
  check_enough_runs(d, lines.back().number);
  return d;
}

Dataset parse_jsonl(std::string_view text, const TableOptions& options) {
  using nlohmann::json;
  const auto lines = content_lines(text);
  if (lines.empty()) throw ParseError(1, "empty file: expected JSON Lines");
  Dataset d;
  std::vector<std::string> keys;  // in d.params/d.categories order after the first line
  std::vector<bool> categorical;
  for (const auto& [number, line_text] : lines) {
    json j;
    try {
      j = json::parse(line_text);
    } catch (const json::parse_error& e) {
      throw ParseError(number, std::string("invalid JSON: ") + e.what());
    }
    if (!j.is_object() || !j.contains("params") || !j["params"].is_object())
      throw ParseError(number, "expected an object with a \"params\" object");
    if (!j.contains("value")) throw ParseError(number, "missing \"value\"");
    const std::vector<double> repetitions = values_of(j["value"], number);
    const json& params = j["params"];
    if (keys.empty()) {
      if (options.params.empty())
        for (const auto& [k, v] : params.items()) keys.push_back(k);
      else
        keys = options.params;
      for (const auto& k : keys) {
        if (!params.contains(k)) throw ParseError(number, "missing parameter '" + k + "'");
        categorical.push_back(params[k].is_string());
        (categorical.back() ? d.categories : d.params).push_back(k);
      }
      if (keys.empty()) throw ParseError(number, "no parameters in \"params\"");
    }
    Dataset::Row row;
    row.line = number;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (!params.contains(keys[k]))
        throw ParseError(number, "missing parameter '" + keys[k] + "'");
      const json& v = params[keys[k]];
      if (categorical[k]) {
        if (!v.is_string())
          throw ParseError(number, "parameter '" + keys[k] + "' is a label on line " +
                                       std::to_string(lines.front().number) + " but " + v.dump() +
                                       " here");
        row.labels.push_back(v.get<std::string>());
      } else {
        if (!v.is_number() || !std::isfinite(v.get<double>()))
          throw ParseError(number, "non-number " + v.dump() + " for parameter '" + keys[k] + "'");
        row.x.push_back(v.get<double>());
      }
    }
    if (options.params.empty())
      for (const auto& [k, v] : params.items())
        if (!contains(keys, k)) throw ParseError(number, "unexpected parameter '" + k + "'");
    for (double v : repetitions) check_target(v, number, "value");
    row.y = median(repetitions);
    if (repetitions.size() > 1) row.repetitions = repetitions;
    d.rows.push_back(std::move(row));
  }
  check_enough_runs(d, lines.back().number);
  return d;
}

std::vector<Point> parse_points(std::string_view text, const std::vector<std::string>& params,
                                const std::vector<std::string>& categories) {
  const auto lines = content_lines(text);
  if (lines.empty()) throw ParseError(1, "empty file: expected a header line");
  std::vector<Point> points;
  if (lines.front().text.front() == '{') {
    using nlohmann::json;
    for (const auto& [number, line_text] : lines) {
      json j;
      try {
        j = json::parse(line_text);
      } catch (const json::parse_error& e) {
        throw ParseError(number, std::string("invalid JSON: ") + e.what());
      }
      if (!j.is_object() || !j.contains("params") || !j["params"].is_object())
        throw ParseError(number, "expected an object with a \"params\" object");
      Point p;
      for (const auto& name : params) {
        if (!j["params"].contains(name))
          throw ParseError(number, "missing parameter '" + name + "'");
        const json& v = j["params"][name];
        if (!v.is_number())
          throw ParseError(number, "non-number " + v.dump() + " for parameter '" + name + "'");
        p.values[name] = v.get<double>();
      }
      for (const auto& name : categories) {
        if (!j["params"].contains(name) || !j["params"][name].is_string())
          throw ParseError(number, "missing label for categorical parameter '" + name + "'");
        p.labels[name] = j["params"][name].get<std::string>();
      }
      points.push_back(std::move(p));
    }
    return points;
  }
  std::vector<std::string> header;
  for (auto f : split_fields(lines.front().text)) header.emplace_back(f);
  auto column = [&](const std::string& name) {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end())
      throw ParseError(lines.front().number, "no column '" + name + "' in the header");
    return static_cast<std::size_t>(it - header.begin());
  };
  std::vector<std::size_t> param_cols, category_cols;
  for (const auto& name : params) param_cols.push_back(column(name));
  for (const auto& name : categories) category_cols.push_back(column(name));
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto fields = split_fields(lines[i].text);
    if (fields.size() != header.size())
      throw ParseError(lines[i].number, "ragged row: " + std::to_string(fields.size()) +
                                            " fields, the header has " +
                                            std::to_string(header.size()));
    Point p;
    for (std::size_t k = 0; k < params.size(); ++k) {
      auto v = to_number(fields[param_cols[k]]);
      if (!v)
        throw ParseError(lines[i].number, "non-number '" + std::string(fields[param_cols[k]]) +
                                              "' in column '" + params[k] + "'");
      p.values[params[k]] = *v;
    }
    for (std::size_t k = 0; k < categories.size(); ++k)
      p.labels[categories[k]] = std::string(fields[category_cols[k]]);
    points.push_back(std::move(p));
  }
  return points;
}

Dataset parse_table(std::string_view text, const TableOptions& options) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return parse_jsonl(text, options);
  return parse_csv(text, options);
}

}  // namespace memwatch::model
