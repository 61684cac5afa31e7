#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace memwatch::cli {

namespace {

const Option* find(std::span<const Option> options, std::string_view name) {
  const auto it =
      std::find_if(options.begin(), options.end(), [&](const Option& o) { return o.name == name; });
  return it == options.end() ? nullptr : &*it;
}

constexpr std::size_t kWidth = 80;

// `text` as lines of at most kWidth columns, each after `indent`; its own line breaks kept.
std::string wrapped(std::string_view text, std::string_view indent) {
  std::string out;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view paragraph = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    std::string line(indent);
    for (std::size_t at = 0; at <= paragraph.size();) {
      const std::size_t space = std::min(paragraph.find(' ', at), paragraph.size());
      const std::string_view word = paragraph.substr(at, space - at);
      if (line.size() > indent.size() && line.size() + 1 + word.size() > kWidth) {
        out += line + "\n";
        line = indent;
      }
      line += (line.size() > indent.size() ? " " : "") + std::string(word);
      at = space + 1;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string usage_text(std::string_view name, const Usage& usage) {
  const std::string command = "memwatch " + std::string(name);
  std::string text;
  std::string_view synopsis = usage.synopsis;
  for (bool first = true; first || !synopsis.empty(); first = false) {
    const std::size_t end = std::min(synopsis.find('\n'), synopsis.size());
    const std::string_view line = synopsis.substr(0, end);
    text += (first ? "usage: " : "       ") + command + (line.empty() ? "" : " ") +
            std::string(line) + "\n";
    synopsis.remove_prefix(std::min(end + 1, synopsis.size()));
  }
  text += wrapped(usage.about, "");
  if (!usage.options.empty()) text += "options:\n";
  for (const Option& o : usage.options) {
    text +=
        "  --" + std::string(o.name) + (o.value.empty() ? "" : " " + std::string(o.value)) + "\n";
    text += wrapped(o.help, "      ");
  }
  return text;
}

Args::Args(std::span<char* const> argv, std::span<const Option> options) {
  // The first problem waits: help asked for after it still wins.
  std::optional<std::string> problem;
  bool help = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string_view word = argv[i];
    if (word == "--") {
      rest_.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      break;
    }
    if (word == "--help" || word == "-h") {
      help = true;
      continue;
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
    const Option* option = find(options, name);
    std::string wrong;
    if (option == nullptr) {
      wrong = "unknown option --" + std::string(name);
    } else if (option->value.empty()) {
      if (inline_value)
        wrong = "option --" + std::string(name) + " takes no value";
      else
        flags_.emplace_back(name);
    } else if (inline_value) {
      options_.emplace_back(name, *inline_value);
    } else if (i + 1 < argv.size()) {
      options_.emplace_back(name, argv[++i]);
    } else {
      wrong = "option --" + std::string(name) + " needs a value";
    }
    if (!wrong.empty() && !problem) problem = std::move(wrong);
  }
  if (help) throw HelpRequested{};
  if (problem) throw OptionError(*problem);
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
  throw OptionError("missing required option --" + std::string(name));
}

void Args::refuse_positional(std::string_view why) const {
  if (positional_.empty()) return;
  throw UsageError("unexpected argument '" + positional_.front() + "'" +
                   (why.empty() ? "" : " (" + std::string(why) + ")"));
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
