// Runs a program to completion (or until a deadline) with extra environment variables, and
// captures stdout, stderr and how it ended.
#pragma once

#include <sys/types.h>

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

// Called in a child just forked by `parent`: the child is killed when the test ends, even by
// an abort, so no program or server it started outlives a failed test (holding ctest's output
// pipe open, which hangs ctest until its timeout).
void die_with(pid_t parent);

// argv[0] is the program's path. `env` is added to (and overrides) this process's environment;
// a value of "\x01unset" removes the variable.
Finished run(const std::vector<std::string>& argv, const Environment& env = {},
             std::chrono::seconds deadline = std::chrono::seconds(120));

// A program started in the background, for tests that act on it while it runs (signal it once
// it says it is ready). Killed and reaped with the object if nobody waited for it.
class Running {
 public:
  enum class Stderr { inherit, discard };
  explicit Running(const std::vector<std::string>& argv, const Environment& env = {},
                   Stderr err = Stderr::inherit);
  ~Running();
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  // The next line of its stdout, without the line end; empty at its end or past the deadline.
  std::string read_line(std::chrono::seconds deadline = std::chrono::seconds(30));
  void signal(int sig);
  // Reads the rest of its stdout and reaps it.
  Finished wait();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string pending_;
  bool reaped_ = false;
};

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

// A CSV file's rows by their header's names (memwatch's CSVs quote nothing); none while the file
// does not exist. A row whose cells do not match the header throws, naming it.
using CsvRow = std::map<std::string, std::string>;
std::vector<CsvRow> read_csv(const std::string& path);

}  // namespace memwatch::test
