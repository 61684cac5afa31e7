// The reference sweeps of bench/data (bench/data/README.md), as the modeler's tests read them.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

#include "memwatch/model/table_parse.hpp"

namespace memwatch::model::testing {

// bench/data/<name>.csv, parsed as `memwatch fit` reads it.
inline Dataset reference_sweep(const std::string& name) {
  std::ifstream in(MEMWATCH_SOURCE_DIR "/bench/data/" + name + ".csv");
  return parse_table(
      std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

}  // namespace memwatch::model::testing
