// libFuzzer target: the options parsers meet any text without crashing. The input is a list of
// NUL-separated strings, taken both as the shim's environment (NAME=VALUE entries, and the
// program's argv for MEMWATCH_ARGV_PARAMS) and as memwatchd's command line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "options.hpp"
#include "settings/config.hpp"

namespace {

std::vector<std::string> g_strings;  // this input's strings; the environment looks them up

const char* fuzzed_environment(const char* name) {
  const std::size_t n = std::strlen(name);
  for (const std::string& s : g_strings)
    if (s.size() > n && s.compare(0, n, name) == 0 && s[n] == '=') return s.c_str() + n + 1;
  return nullptr;
}

void ignore_warning(const std::string& message) {
  if (message.empty()) std::abort();  // a warning always says what was wrong
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  g_strings.clear();
  const char* text = reinterpret_cast<const char*>(data);
  for (std::size_t start = 0; start <= size;) {
    const void* nul = std::memchr(text + start, '\0', size - start);
    const std::size_t end =
        nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - text) : size;
    g_strings.emplace_back(text + start, end - start);
    start = end + 1;
  }
  std::vector<char*> argv;
  for (std::string& s : g_strings) argv.push_back(s.data());

  static memwatch::shim::Config config;
  memwatch::shim::config_load(config, fuzzed_environment, static_cast<int>(argv.size()),
                              argv.data(), ignore_warning);
  if (config.param_count < 0 || config.param_count > memwatch::shim::kMaxParams) std::abort();
  if (config.workload[sizeof config.workload - 1] != '\0') std::abort();

  std::string error;
  const auto options = memwatch::daemon::parse_options(std::span<char* const>(argv), error);
  if (!options && error.empty()) std::abort();  // a refusal always says why
  return 0;
}
