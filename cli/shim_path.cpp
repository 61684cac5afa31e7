#include "shim_path.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace memwatch::cli {

namespace fs = std::filesystem;

std::string find_shim(const std::string& from_option) {
  std::string candidate = from_option;
  if (candidate.empty())
    if (const char* e = std::getenv("MEMWATCH_SHIM"); e && *e) candidate = e;
  if (candidate.empty()) {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) candidate = (self.parent_path().parent_path() / "lib" / "libmemwatch.so").string();
  }
  std::error_code ec;
  if (candidate.empty() || !fs::is_regular_file(candidate, ec))
    throw std::runtime_error("libmemwatch.so not found at '" + candidate +
                             "' (build it, or name it with --shim or MEMWATCH_SHIM)");
  return fs::absolute(candidate).string();
}

}  // namespace memwatch::cli
