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

// How far past the runs a prediction lies, as every predict and max answer carries it (offline
// and the daemon's), into and out of a JSON object (nlohmann's json). Read back from an answer
// without them (an older daemon): within the runs, vouched for.
template <class Json>
void put_extrapolation(Json& out, const Prediction& p) {
  out["extrapolating"] = p.extrapolating;
  out["reach_ratio"] = p.reach_ratio;
  out["vouched"] = p.vouched;
}
template <class Json>
[[nodiscard]] Prediction extrapolation_of(const Json& in) {
  Prediction p;
  p.extrapolating = in.value("extrapolating", false);
  p.reach_ratio = in.value("reach_ratio", 1.0);
  p.vouched = in.value("vouched", true);
  return p;
}

}  // namespace memwatch::model
