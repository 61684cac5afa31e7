// Numbers from a trainer's own YAML or JSON configuration file (MEMWATCH_CONFIG_PARAMS), read
// with libyaml at start-up. libyaml is loaded only then, RTLD_LOCAL: nothing of it joins the
// program's global scope, and a program run without the variable never maps it.
#pragma once

#include <string>
#include <string_view>

namespace memwatch::shim {

struct ConfigNumber {
  double value = 0;
  std::string error;  // empty when `value` is good: else names the file, the key, the expected
};

// `key` is a dotted path into the file's mappings, `[i]` for a list element
// (`loaders.train.slice_builder.patch_shape`, `model.f_maps[0]`). A list of numbers named
// without an index gives the product of its elements (a patch's volume).
ConfigNumber config_file_number(const std::string& path, std::string_view key);

}  // namespace memwatch::shim
