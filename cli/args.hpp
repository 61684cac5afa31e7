// Command-line arguments of one subcommand: `--name value`, `--name=value`, flags, and the
// positional words left over. Unknown options are errors the caller reports.
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memwatch::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `valued` lists the options that take a value; `flags` those that do not. A lone `--` ends
  // option parsing: everything after it is `rest()` (a command line to run, say).
  Args(std::span<char* const> argv, std::vector<std::string_view> valued,
       std::vector<std::string_view> flags);

  [[nodiscard]] std::optional<std::string> value(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> values(std::string_view name) const;  // repeated option
  [[nodiscard]] std::string required(std::string_view name) const;
  [[nodiscard]] bool flag(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& positional() const { return positional_; }
  [[nodiscard]] const std::vector<std::string>& rest() const { return rest_; }

 private:
  std::vector<std::pair<std::string, std::string>> options_;
  std::vector<std::string> flags_;
  std::vector<std::string> positional_;
  std::vector<std::string> rest_;
};

// Parses a number with nothing trailing; throws UsageError naming `what` otherwise.
double parse_number(std::string_view text, std::string_view what);

// Parses a whole number from `lo` to `hi`; throws UsageError naming `what` and the range otherwise.
std::size_t parse_count(std::string_view text, std::string_view what, std::size_t lo,
                        std::size_t hi);

}  // namespace memwatch::cli
