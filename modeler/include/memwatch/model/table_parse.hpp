// Reading runs from text: CSV with a header, or JSON Lines as Extra-P reads them
// ({"params":{...},"value":N}). Pure string parsing; the caller owns the file and adds its name
// to the message of a ParseError.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "memwatch/model/dataset.hpp"

namespace memwatch::model {

struct ParseError : std::runtime_error {
  ParseError(std::size_t line_no, std::string what_went_wrong)
      : std::runtime_error("line " + std::to_string(line_no) + ": " + what_went_wrong),
        line(line_no),
        problem(std::move(what_went_wrong)) {}
  std::size_t line;     // 1-based
  std::string problem;  // without the line
};

struct TableOptions {
  // CSV target column; empty picks device_peak_bytes where every run has a device peak, else
  // host_peak_bytes when the header has it, else the last column.
  std::string target;
  // Parameter columns/keys; empty takes every column except the target and the measurement
  // columns a sweep writes (see measurement_columns()).
  std::vector<std::string> params;
};

// Columns of `memwatch sweep` output that are measurements, never parameters.
[[nodiscard]] const std::vector<std::string>& measurement_columns();

// Rows whose exit_status column is non-zero are skipped, each with a note in Dataset::notes.
// A column whose values are all non-numeric is categorical; a number column with one word in
// it is an error. Throws ParseError for a non-number, a missing column, a ragged row, a
// non-positive target, and for fewer runs than parameters.
[[nodiscard]] Dataset parse_csv(std::string_view text, const TableOptions& options = {});
[[nodiscard]] Dataset parse_jsonl(std::string_view text, const TableOptions& options = {});
// JSON Lines when the first non-blank character is '{', CSV otherwise.
[[nodiscard]] Dataset parse_table(std::string_view text, const TableOptions& options = {});

// Points to predict at: CSV whose header names every parameter and category (other columns are
// ignored, so a file of runs works too), or JSON Lines with a "params" object. Same errors.
[[nodiscard]] std::vector<Point> parse_points(std::string_view text,
                                              const std::vector<std::string>& params,
                                              const std::vector<std::string>& categories);

}  // namespace memwatch::model
