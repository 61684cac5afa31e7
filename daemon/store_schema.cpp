#include "store_schema.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace memwatch::daemon {

using protocol::Figure;
using protocol::kFigures;

const std::vector<Column>& added_columns() {
  static const std::vector<Column> columns = [] {
    std::vector<Column> c;
    for (const Figure& f : kFigures)
      if (f.run) c.push_back({std::string(f.name), "integer", "0"});
    c.push_back({"device_peaks", "text", "'[]'"});
    c.push_back({"scheduler_job", "text", "''"});
    return c;
  }();
  return columns;
}

const std::string& run_columns() {
  static const std::string columns = [] {
    std::string c =
        "id, workload, params, host, pid, status, started, elapsed_s, host_capacity_bytes, "
        "exit_cause, samples";
    for (const Column& f : added_columns()) c += ", " + f.name;
    return c + ", exit_detail";
  }();
  return columns;
}

std::vector<ColumnValue> run_values(const Run& r) {
  std::vector<ColumnValue> v;
  auto integer = [&](std::int64_t x) { v.emplace_back(std::in_place_type<std::int64_t>, x); };
  auto real = [&](double x) { v.emplace_back(std::in_place_type<double>, x); };
  auto text = [&](std::string x) { v.emplace_back(std::in_place_type<std::string>, std::move(x)); };
  integer(r.id);
  text(r.workload);
  text(params_json(r.params));
  text(r.host);
  integer(r.pid);
  text(status_name(r.status));
  real(r.started_unix_s);
  real(r.elapsed_s);
  integer(r.host_capacity_bytes);
  text(r.exit_cause);
  integer(r.samples);
  protocol::for_each_run_figure(r, [&](const Figure&, std::int64_t value) { integer(value); });
  text(peaks_json(r.device_peaks));
  text(r.scheduler_job);
  integer(r.exit_detail);
  return v;
}

std::string params_json(const protocol::Params& params) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : params) j[name] = value;
  return j.dump();
}

protocol::Params params_from_json(const std::string& text) {
  protocol::Params params;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return params;
  for (const auto& [name, value] : j.items())
    if (value.is_number()) params.emplace_back(name, value.get<double>());
  return params;
}

std::string peaks_json(const std::vector<std::int64_t>& peaks) {
  return nlohmann::json(peaks).dump();
}

std::vector<std::int64_t> peaks_from_json(const std::string& text) {
  std::vector<std::int64_t> peaks;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return peaks;
  for (const auto& v : j)
    if (v.is_number_integer()) peaks.push_back(v.get<std::int64_t>());
  return peaks;
}

RunStatus status_from(const std::string& s) {
  if (s == "finished") return RunStatus::finished;
  if (s == "signaled") return RunStatus::signaled;
  if (s == "killed") return RunStatus::killed;
  return RunStatus::running;
}

const char* status_name(RunStatus s) {
  switch (s) {
    case RunStatus::running:
      return "running";
    case RunStatus::finished:
      return "finished";
    case RunStatus::signaled:
      return "signaled";
    case RunStatus::killed:
      return "killed";
  }
  return "running";
}

bool raised_by_samples(const Figure& f) {
  return f.sample && f.run;
}

std::unordered_map<std::int64_t, RunChange> changes_of(const std::vector<QueuedSample>& batch) {
  std::unordered_map<std::int64_t, RunChange> changes;
  for (const QueuedSample& q : batch) {
    RunChange& c = changes[q.run];
    protocol::for_each_sample_figure(q.sample, [&](const Figure& f, std::int64_t v) {
      std::int64_t& peak = c.peaks[protocol::figure_index(f)];
      peak = std::max(peak, v);
    });
    c.last_t_s = std::max(c.last_t_s, q.sample.t_s);
    ++c.samples;
  }
  return changes;
}

}  // namespace memwatch::daemon
