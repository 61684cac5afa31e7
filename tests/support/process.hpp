// Runs a program to completion (or until a deadline) with extra environment variables, and
// captures stdout, stderr and how it ended.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace memwatch::test {

struct Finished {
  int exit_code = -1;  // valid when !signaled
  int signal = 0;      // the signal that ended it, when signaled
  bool signaled = false;
  bool timed_out = false;
  std::string out;
  std::string err;
};

using Environment = std::map<std::string, std::string>;

// argv[0] is the program's path. `env` is added to (and overrides) this process's environment;
// a value of "\x01unset" removes the variable.
Finished run(const std::vector<std::string>& argv, const Environment& env = {},
             std::chrono::seconds deadline = std::chrono::seconds(120));

// A fresh empty directory under the system's temporary folder, removed with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path);

// The non-empty lines of `text`, without their line ends.
std::vector<std::string> lines_of(const std::string& text);

}  // namespace memwatch::test
