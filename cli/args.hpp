// Command-line arguments of one subcommand: `--name value`, `--name=value`, flags, and the
// positional words left over, read by the subcommand's table of options, the one definition its
// parser and its --help are both made from. Unknown options are errors the caller reports.
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

// A word that is no option of the command, or an option without its value or with one it does
// not take: the command's --help lists them.
struct OptionError : UsageError {
  using UsageError::UsageError;
};

// --help or -h where an option may stand (not as an option's value, not after `--`): the
// command's help is printed instead of running it. No std::exception, so that no command's
// handler of its own errors takes it for one.
struct HelpRequested {};

// One option of a subcommand.
struct Option {
  std::string_view name;   // without the leading --
  std::string_view value;  // what its value stands for (FILE, N); empty for a flag
  std::string_view help;   // what it does, for --help
};

// A subcommand's --help: `usage: memwatch NAME` and its synopsis (more lines each start with
// "memwatch NAME" too), what it does, then its options one by one.
struct Usage {
  std::string_view synopsis;
  std::string_view about;
  std::span<const Option> options;
};

// The --help text of subcommand `name`, wrapped to 80 columns.
[[nodiscard]] std::string usage_text(std::string_view name, const Usage& usage);

class Args {
 public:
  // `options` are those the subcommand takes. A lone `--` ends option parsing: everything
  // after it is `rest()` (a command line to run, say). Throws HelpRequested where the words ask
  // for help, else OptionError for the first word it cannot read.
  Args(std::span<char* const> argv, std::span<const Option> options);

  [[nodiscard]] std::optional<std::string> value(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> values(std::string_view name) const;  // repeated option
  [[nodiscard]] std::string required(std::string_view name) const;
  [[nodiscard]] bool flag(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& positional() const { return positional_; }
  // For a command that takes no positional word: throws UsageError naming the first, with
  // `why` in parentheses after it when given.
  void refuse_positional(std::string_view why = {}) const;
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
