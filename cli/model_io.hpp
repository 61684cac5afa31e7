// What `memwatch fit`, `predict` and `sweep --auto` share about models: the modeler library
// parses strings; here files are read and its errors get the file's or the option's name.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "args.hpp"
#include "memwatch/model/priors.hpp"

namespace memwatch::cli {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `--axes dim=3,pd=1`: the tensor axes each parameter spans (priors.hpp).
inline std::map<std::string, int> axes_option(const std::string& text) {
  try {
    return model::parse_axes(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--axes ") + e.what());
  }
}

}  // namespace memwatch::cli
