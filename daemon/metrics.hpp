// What memwatchd shows Prometheus (`--metrics`): the loop gathers a snapshot (running runs, the
// prediction errors of finished ones, verdicts, ingest) at most every 100 ms; the metrics thread
// renders it, with each workload's latest model, in the text exposition format (version 0.0.4).
// Names and units by Prometheus's conventions: memwatch_ prefix, base units (_bytes, _ratio),
// counters end in _total. Per-run series exist only while the run does.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models.hpp"
#include "status_board.hpp"

namespace memwatch::daemon {

struct RunMetrics {
  std::int64_t run = 0;
  std::string workload, node;
  std::string scheduler_job;  // Slurm's job id; empty: none
  std::int64_t host_live = 0, host_peak = 0, device_live = 0, device_peak = 0;
  std::string predicted_target;  // the model its verdict judged by; empty: none
  double predicted_bytes = 0, upper_bytes = 0;
};

// The histogram of |measured - predicted| / measured over a workload's finished runs that had a
// prediction, by these upper bounds (and +Inf).
inline constexpr std::array<double, 8> kPredictionErrorBuckets{0.005, 0.01, 0.02, 0.03,
                                                               0.05,  0.1,  0.2,  0.5};
struct PredictionErrors {
  std::array<std::uint64_t, kPredictionErrorBuckets.size()> at_most{};  // not cumulative
  std::uint64_t count = 0;
  double sum = 0;
  void add(double relative_error);
};

struct MetricsSnapshot {
  std::vector<RunMetrics> running;
  std::vector<std::string> workloads;
  std::map<std::string, PredictionErrors> prediction_errors;  // by workload
  std::array<std::uint64_t, 3> verdicts{};                    // by protocol::VerdictKind
  LiveFigures figures;
  std::size_t queued_samples = 0;
};

// The exposition text: the snapshot, and each workload's latest models from `models`.
std::string metrics_text(const MetricsSnapshot& snapshot, const ModelCache& models);

}  // namespace memwatch::daemon
