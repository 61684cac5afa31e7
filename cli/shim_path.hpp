// Where libmemwatch.so is: --shim, else MEMWATCH_SHIM, else beside this memwatch binary
// (build/bin/memwatch -> build/lib/libmemwatch.so).
#pragma once

#include <string>

namespace memwatch::cli {

// Throws std::runtime_error naming the places looked at when none holds the shim.
std::string find_shim(const std::string& from_option);

}  // namespace memwatch::cli
