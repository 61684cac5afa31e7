// One run of a sweep: the command started under the shim in its own process group, watched for
// its timeout and for an interrupt (passed on to everything it started), and what its report
// says once it ends.
#pragma once

#include <signal.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memwatch/protocol/figures.hpp"

namespace memwatch::cli {

struct RunSpec {
  std::vector<std::string> argv;
  std::string params;  // MEMWATCH_PARAMS
  std::filesystem::path report, log, shim;
  std::optional<std::string> workload;
  std::optional<double> timeout_s;
};

struct RunResult {
  // The run figures (figures.hpp) as its report has them, by figure; empty without a report.
  std::array<std::optional<std::int64_t>, protocol::kFigureCount> figures;
  double elapsed_s = 0;
  int exit_status = 0;  // the exit code, or minus the signal that ended the run
  bool interrupted = false;
  std::string log_tail;
};

// Set from the sweep's signal handler; a running command is sent the same signal.
extern std::atomic<int> g_sweep_interrupt;

// While it lives, SIGINT and SIGTERM set g_sweep_interrupt instead of ending the sweep, so the
// running command gets the signal and the sweep writes only whole rows.
class InterruptCatcher {
 public:
  InterruptCatcher();
  ~InterruptCatcher();
  InterruptCatcher(const InterruptCatcher&) = delete;
  InterruptCatcher& operator=(const InterruptCatcher&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// A run figure by its CSV column ("host_peak_bytes"); none when the run has no such figure.
std::optional<double> figure_of(const RunResult& r, std::string_view column);

// Throws when the command cannot be started at all (every point would fail the same way).
RunResult run_one(const RunSpec& spec);

}  // namespace memwatch::cli
