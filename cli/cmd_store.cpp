// `memwatch store copy SRC DST`: moves a store between SQLite and PostgreSQL (daemon/store_copy.hpp
// says what is copied and when it refuses), showing its progress on stderr.
#include <unistd.h>

#include <cstdio>
#include <span>
#include <string>

#include "args.hpp"
#include "store.hpp"
#include "store_copy.hpp"

namespace memwatch::cli {

namespace {

constexpr const char* kUsage =
    "expected: store copy SRC DST (each a SQLite file's path or postgresql://USER@HOST/DB)";

// One line, redrawn in place on a terminal; a line per tenth of the samples otherwise (a log).
class ProgressLine {
 public:
  void show(const daemon::CopyProgress& p) {
    const std::int64_t tenth = p.total_samples / 10 + 1;
    if (!terminal_ && p.samples / tenth == shown_ && p.samples != p.total_samples) return;
    shown_ = p.samples / tenth;
    std::fprintf(stderr, "%srunning copy: %lld of %lld runs, %lld of %lld samples%s",
                 terminal_ ? "\r" : "", static_cast<long long>(p.runs),
                 static_cast<long long>(p.total_runs), static_cast<long long>(p.samples),
                 static_cast<long long>(p.total_samples), terminal_ ? "" : "\n");
    std::fflush(stderr);
  }
  ~ProgressLine() {
    if (terminal_) std::fputc('\n', stderr);
  }

 private:
  bool terminal_ = isatty(STDERR_FILENO) == 1;
  std::int64_t shown_ = -1;
};

int copy(const std::vector<std::string>& words) {
  if (words.size() != 3) throw UsageError(kUsage);
  const std::string& source = words[1];
  const std::string& destination = words[2];
  daemon::CopyProgress done;
  {
    ProgressLine line;
    done = daemon::copy_store(source, destination,
                              [&](const daemon::CopyProgress& p) { line.show(p); });
  }
  std::printf("copied %lld runs, %lld samples and %lld models from %s to %s\n",
              static_cast<long long>(done.runs), static_cast<long long>(done.samples),
              static_cast<long long>(done.models), daemon::without_password(source).c_str(),
              daemon::without_password(destination).c_str());
  return 0;
}

}  // namespace

std::string help_store() {
  return usage_text("store", {"copy SRC DST",
                              "Copies every run, sample and model of the store SRC into DST, "
                              "which must be empty; each is a SQLite file's path or "
                              "postgresql://USER@HOST/DB. Progress is shown on stderr.",
                              {}});
}

int cmd_store(std::span<char* const> argv) {
  const Args args(argv, {});
  const auto& words = args.positional();
  if (words.empty() || words[0] != "copy") throw UsageError(kUsage);
  return copy(words);
}

}  // namespace memwatch::cli
