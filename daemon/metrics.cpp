#include "metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "memwatch/protocol/wire.hpp"

namespace memwatch::daemon {

namespace {

using Labels = std::vector<std::pair<std::string_view, std::string>>;

// A label value with backslash, double quote and line feed escaped, as the format asks.
std::string escaped(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

// The shortest text that reads back as `value` (0.05, not 0.050000000000000003).
std::string number(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return ec == std::errc() ? std::string(text, end) : std::string("NaN");
}

class Exposition {
 public:
  // A family's HELP and TYPE lines, once, before its samples.
  Exposition& family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP " + std::string(name) + " " + std::string(help) + "\n";
    out_ += "# TYPE " + std::string(name) + " " + std::string(type) + "\n";
    return *this;
  }
  Exposition& sample(std::string_view name, const Labels& labels, double value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) out_ += ',';
        out_ += std::string(labels[i].first) + "=\"" + escaped(labels[i].second) + '"';
      }
      out_ += '}';
    }
    out_ += " " + number(value) + "\n";
    return *this;
  }
  [[nodiscard]] std::string text() && { return std::move(out_); }

 private:
  std::string out_;
};

// `job` is Prometheus's own target label (the scrape job's name): the batch scheduler's job is
// `scheduler_job`, present when the run has one.
Labels run_labels(const RunMetrics& r) {
  Labels labels = {{"workload", r.workload}, {"run", std::to_string(r.run)}, {"node", r.node}};
  if (!r.scheduler_job.empty()) labels.emplace_back("scheduler_job", r.scheduler_job);
  return labels;
}

void daemon_figures(Exposition& e, const MetricsSnapshot& s) {
  const LiveFigures& f = s.figures;
  auto counter = [&](const char* name, const char* help, double value) {
    e.family(name, "counter", help).sample(name, {}, value);
  };
  auto gauge = [&](const char* name, const char* help, double value) {
    e.family(name, "gauge", help).sample(name, {}, value);
  };
  counter("memwatch_runs_started_total", "Runs the store holds, each begun by a shim's HELLO.",
          static_cast<double>(f.totals.runs));
  gauge("memwatch_runs_running", "Runs whose shim is still reporting.",
        static_cast<double>(f.totals.running));
  counter("memwatch_samples_stored_total", "Samples the store holds.",
          static_cast<double>(f.totals.samples));
  counter("memwatch_ingest_frames_total", "Frames taken from the ingest socket.",
          static_cast<double>(f.ingest.frames));
  counter("memwatch_ingest_rejected_frames_total",
          "Frames refused: not memwatch's, malformed, or from a shim that never said hello.",
          static_cast<double>(f.ingest.rejected));
  gauge("memwatch_ingest_queued_samples", "Samples received and not yet written to the store.",
        static_cast<double>(s.queued_samples));
  gauge("memwatch_store_reachable", "1 while the store answers; 0 while its server is away.",
        f.store.reachable ? 1 : 0);
  gauge("memwatch_store_queued_runs",
        "Runs with something waiting in the local queue for the PostgreSQL store.",
        static_cast<double>(f.store.queued_runs));
  gauge("memwatch_store_queued_samples",
        "Samples waiting in the local queue for the PostgreSQL store.",
        static_cast<double>(f.store.queued_samples));
  counter("memwatch_store_dropped_samples_total",
          "Samples dropped because the local queue was full (runs are never dropped).",
          static_cast<double>(f.store.dropped_samples));
  counter("memwatch_capacity_warnings_total",
          "Warnings published: predicted OOMs and live memory past or on course to its share.",
          static_cast<double>(f.ingest.warnings));
  counter("memwatch_curve_refused_clients_total", "CurveZMQ handshakes refused.",
          static_cast<double>(f.refused_clients));
  e.family("memwatch_verdicts_total", "counter", "Verdicts sent to starting runs, by outcome.");
  constexpr const char* kOutcomes[] = {"no_model", "fits", "over_capacity"};
  for (std::size_t i = 0; i < s.verdicts.size(); ++i)
    e.sample("memwatch_verdicts_total", {{"outcome", kOutcomes[i]}},
             static_cast<double>(s.verdicts[i]));
}

void running_runs(Exposition& e, const MetricsSnapshot& s) {
  struct Figure {
    const char* name;
    const char* help;
    std::int64_t RunMetrics::*value;
  };
  constexpr Figure kFigures[] = {
      {"memwatch_run_host_live_bytes", "A running run's live host memory (its job's).",
       &RunMetrics::host_live},
      {"memwatch_run_host_peak_bytes", "A running run's host high-water mark so far.",
       &RunMetrics::host_peak},
      {"memwatch_run_device_live_bytes", "A running run's live device memory, all devices.",
       &RunMetrics::device_live},
      {"memwatch_run_device_peak_bytes", "A running run's device high-water mark so far.",
       &RunMetrics::device_peak},
  };
  for (const Figure& f : kFigures) {
    e.family(f.name, "gauge", f.help);
    for (const RunMetrics& r : s.running)
      e.sample(f.name, run_labels(r), static_cast<double>(r.*f.value));
  }
  struct Prediction {
    const char* name;
    const char* help;
    double RunMetrics::*value;
  };
  constexpr Prediction kPredictions[] = {
      {"memwatch_run_predicted_peak_bytes",
       "The peak the workload's model predicted for a running run, by the figure judged.",
       &RunMetrics::predicted_bytes},
      {"memwatch_run_upper_bound_bytes",
       "The model's upper bound on a running run's peak, by the figure judged.",
       &RunMetrics::upper_bytes},
  };
  for (const Prediction& p : kPredictions) {
    e.family(p.name, "gauge", p.help);
    for (const RunMetrics& r : s.running) {
      if (r.predicted_target.empty()) continue;
      Labels labels = run_labels(r);
      labels.emplace_back("target", r.predicted_target);
      e.sample(p.name, labels, r.*p.value);
    }
  }
}

void models(Exposition& e, const MetricsSnapshot& s, const ModelCache& cache) {
  struct Fitted {
    Labels labels;
    double worst_loo = 0;
    std::size_t runs = 0;
  };
  std::vector<Fitted> fitted;
  for (const std::string& workload : s.workloads)
    for (const char* target : {protocol::kHostPeakTarget, protocol::kDevicePeakTarget}) {
      const auto m = cache.find(workload, target);
      if (!m || m->parts.empty()) continue;
      Fitted f{{{"workload", workload}, {"target", target}}};
      for (const auto& part : m->parts) {
        f.worst_loo = std::max(f.worst_loo, part.loo_mape);
        f.runs += part.runs;
      }
      fitted.push_back(std::move(f));
    }
  e.family("memwatch_model_loo_error_ratio", "gauge",
           "The latest model's leave-one-out mean absolute relative error (its worst part).");
  for (const Fitted& f : fitted) e.sample("memwatch_model_loo_error_ratio", f.labels, f.worst_loo);
  e.family("memwatch_model_runs", "gauge", "Runs the latest model was fitted to.");
  for (const Fitted& f : fitted)
    e.sample("memwatch_model_runs", f.labels, static_cast<double>(f.runs));
}

void prediction_errors(Exposition& e, const MetricsSnapshot& s) {
  const char* name = "memwatch_prediction_error_ratio";
  e.family(name, "histogram",
           "|measured - predicted| / measured peak of finished runs that had a prediction.");
  for (const auto& [workload, errors] : s.prediction_errors) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kPredictionErrorBuckets.size(); ++i) {
      cumulative += errors.at_most[i];
      e.sample("memwatch_prediction_error_ratio_bucket",
               {{"workload", workload}, {"le", number(kPredictionErrorBuckets[i])}},
               static_cast<double>(cumulative));
    }
    e.sample("memwatch_prediction_error_ratio_bucket", {{"workload", workload}, {"le", "+Inf"}},
             static_cast<double>(errors.count));
    e.sample("memwatch_prediction_error_ratio_sum", {{"workload", workload}}, errors.sum);
    e.sample("memwatch_prediction_error_ratio_count", {{"workload", workload}},
             static_cast<double>(errors.count));
  }
}

}  // namespace

void PredictionErrors::add(double relative_error) {
  for (std::size_t i = 0; i < kPredictionErrorBuckets.size(); ++i)
    if (relative_error <= kPredictionErrorBuckets[i]) {
      ++at_most[i];
      break;
    }
  ++count;
  sum += relative_error;
}

std::string metrics_text(const MetricsSnapshot& snapshot, const ModelCache& cache) {
  Exposition e;
  daemon_figures(e, snapshot);
  running_runs(e, snapshot);
  models(e, snapshot, cache);
  prediction_errors(e, snapshot);
  return std::move(e).text();
}

}  // namespace memwatch::daemon
