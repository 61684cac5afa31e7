// The model as JSON (schema "memwatch.model/1"): what `memwatch fit --json` prints, what
// `memwatch predict` and the daemon read back. Strings in and out; no file I/O.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "memwatch/model/model.hpp"

namespace memwatch::model {

struct ModelJsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view model_schema = "memwatch.model/1";

[[nodiscard]] std::string to_json(const Model& m, int indent = 2);
// Throws ModelJsonError naming what is missing or malformed.
[[nodiscard]] Model model_from_json(std::string_view text);

}  // namespace memwatch::model
