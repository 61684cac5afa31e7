#include "settings/program_name.hpp"

#include <cctype>
#include <string_view>

namespace memwatch::shim {

namespace {

std::string_view basename_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// `prefix` followed by a version or nothing: python, python3, python3.11, pypy3.
bool versioned(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return false;
  for (char c : name.substr(prefix.size()))
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  return true;
}

struct Interpreter {
  std::string_view code_flag;    // the program text follows on the command line: no script
  std::string_view module_flag;  // a module's name follows: the workload is the module
  std::string_view value_flags;  // single-letter flags that take the next word as their value
};

constexpr Interpreter kPython{"-c", "-m", "WXQ"};
constexpr Interpreter kShell{"-c", "", "o"};
constexpr Interpreter kOther{"-e", "", "rI"};

const Interpreter* interpreter(std::string_view name) {
  if (versioned(name, "python") || versioned(name, "pypy")) return &kPython;
  if (name == "sh" || name == "bash" || name == "dash" || name == "zsh") return &kShell;
  if (versioned(name, "perl") || name == "ruby" || name == "node" || name == "Rscript" ||
      name == "julia")
    return &kOther;
  return nullptr;
}

// A script's name without its directory and extension, in the characters a workload name has.
std::string script_name(std::string_view path, bool strip_extension) {
  std::string_view base = basename_of(path);
  const std::size_t dot = base.rfind('.');
  if (strip_extension && dot != std::string_view::npos && dot > 0) base = base.substr(0, dot);
  std::string name;
  for (char c : base)
    name +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  return name;
}

}  // namespace

std::string program_name(int argc, char** argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) return {};
  const std::string self = script_name(argv[0], /*strip_extension=*/false);
  const Interpreter* in = interpreter(self);
  if (in == nullptr) return self;
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--" && i + 1 < argc) return script_name(argv[i + 1], true);
    if (!word.starts_with("-") || word == "-") return word == "-" ? self : script_name(word, true);
    if (word == in->code_flag) return self;
    if (!in->module_flag.empty() && word.starts_with(in->module_flag)) {
      const std::string_view module = word.size() > 2 ? word.substr(2)
                                      : i + 1 < argc  ? std::string_view(argv[i + 1])
                                                      : std::string_view();
      return module.empty() ? self : script_name(module, false);
    }
    // -W arg, -X arg: skip the value too (joined forms such as -Wignore carry their own).
    if (word.size() == 2 && in->value_flags.find(word[1]) != std::string_view::npos) ++i;
  }
  return self;
}

}  // namespace memwatch::shim
