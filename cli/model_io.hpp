// File handling shared by `memwatch fit` and `memwatch predict`: the modeler library parses
// strings; here files are read and its errors get the file's name.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace memwatch::cli {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace memwatch::cli
