#include "query.hpp"

#include <cmath>

#include "memwatch/model/model_json.hpp"
#include "refit.hpp"
#include "verdict.hpp"

namespace memwatch::daemon {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxRequest = 64 * 1024;

json failure(const std::string& why) {
  return {{"ok", false}, {"error", why}};
}

// The "params" object of a request: finite numbers by name.
model::Point point_from(const json& r) {
  model::Point p;
  if (!r.contains("params")) return p;
  if (!r["params"].is_object()) throw std::invalid_argument("\"params\" must be an object");
  for (const auto& [name, value] : r["params"].items()) {
    if (!value.is_number() || !std::isfinite(value.get<double>()))
      throw std::invalid_argument("parameter '" + name + "' must be a finite number");
    p.values[name] = value.get<double>();
  }
  return p;
}

std::string target_of(const json& r) {
  const std::string target = r.value("target", std::string(kHostTarget));
  if (target != kHostTarget && target != kDeviceTarget)
    throw std::invalid_argument("target must be host_peak_bytes or device_peak_bytes");
  return target;
}

}  // namespace

json run_json(const Run& r) {
  json params = json::object();
  for (const auto& [name, value] : r.params) {
    if (value == static_cast<double>(static_cast<std::int64_t>(value)))
      params[name] = static_cast<std::int64_t>(value);
    else
      params[name] = value;
  }
  json run = {{"id", r.id},
              {"workload", r.workload},
              {"params", params},
              {"host", r.host},
              {"pid", r.pid},
              {"status", status_name(r.status)},
              {"started", r.started_unix_s},
              {"elapsed_s", r.elapsed_s},
              {"device_peaks", r.device_peaks},
              {"exit_cause", r.exit_cause},
              {"exit_detail", r.exit_detail},
              {"scheduler_job", r.scheduler_job},
              {"samples", r.samples}};
  protocol::for_each_run_figure(
      r, [&](const protocol::Figure& f, std::int64_t v) { run[std::string(f.name)] = v; });
  return run;
}

QueryTable::QueryTable(QueryContext context) : context_(std::move(context)) {
  ops_ = {
      {"status", {}, &QueryTable::op_status},
      {"workloads", {}, &QueryTable::op_workloads},
      {"runs", {"workload"}, &QueryTable::op_runs},
      {"model", {"workload", "target"}, &QueryTable::op_model},
      {"predict", {"workload"}, &QueryTable::op_predict},
      {"max", {"workload", "vary"}, &QueryTable::op_max},
  };
}

std::string QueryTable::answer(std::string_view request) const {
  try {
    if (request.size() > kMaxRequest) return failure("request too large (at most 64 KiB)").dump();
    const json r = json::parse(request, nullptr, /*allow_exceptions=*/false);
    if (!r.is_object() || !r.contains("op") || !r["op"].is_string())
      return failure("expected a JSON object with a string \"op\"").dump();
    const std::string op = r["op"];
    for (const Op& o : ops_) {
      if (o.name != op) continue;
      for (std::string_view field : o.required) {
        const std::string key(field);
        if (!r.contains(key) || !r[key].is_string() || r[key].get<std::string>().empty())
          return failure("op '" + op + "' needs a non-empty string \"" + key + "\"").dump();
      }
      return (this->*o.handler)(r).dump();
    }
    std::string known;
    for (const Op& o : ops_) known += (known.empty() ? "" : ", ") + std::string(o.name);
    return failure("unknown op '" + op + "' (known: " + known + ")").dump();
  } catch (const std::exception& e) {
    return failure(e.what()).dump();
  }
}

json QueryTable::op_status(const json&) const {
  json s = context_.status();
  s["ok"] = true;
  return s;
}

json QueryTable::op_workloads(const json&) const {
  json list = json::array();
  for (const std::string& w : context_.store->workloads()) {
    const auto runs = context_.store->runs(w);
    list.push_back({{"workload", w}, {"runs", runs.size()}});
  }
  return {{"ok", true}, {"workloads", list}};
}

json QueryTable::op_runs(const json& r) const {
  json list = json::array();
  for (const Run& run : context_.store->runs(r["workload"])) list.push_back(run_json(run));
  return {{"ok", true}, {"runs", list}};
}

json QueryTable::op_model(const json& r) const {
  const auto model = context_.store->latest_model(r["workload"], r["target"]);
  if (!model)
    return failure("no model yet for workload '" + r["workload"].get<std::string>() +
                   "', target '" + r["target"].get<std::string>() + "'");
  return {{"ok", true}, {"model", json::parse(*model)}};
}

json QueryTable::op_predict(const json& r) const {
  const std::string workload = r["workload"];
  const std::string target = target_of(r);
  const auto m = context_.models->find(workload, target);
  if (m == nullptr)
    return failure("no model yet for workload '" + workload + "', target " + target);
  const model::Point p = point_from(r);
  const model::Prediction pred = m->predict(p);
  std::size_t runs = 0;
  for (const auto& part : m->parts) runs += part.runs;
  json reply = {{"ok", true},
                {"target", target},
                {"peak_bytes", pred.value},
                {"upper_bytes", pred.upper},
                {"formula", formula_of(*m, p)},
                {"runs", runs}};
  model::put_extrapolation(reply, pred);
  return reply;
}

json QueryTable::op_max(const json& r) const {
  const std::string workload = r["workload"];
  const std::string vary = r["vary"];
  const std::string target = target_of(r);
  if (!r.contains("capacity_bytes") || !r["capacity_bytes"].is_number() ||
      !(r["capacity_bytes"].get<double>() > 0))
    return failure("op 'max' needs a positive number \"capacity_bytes\"");
  const auto m = context_.models->find(workload, target);
  if (m == nullptr)
    return failure("no model yet for workload '" + workload + "', target " + target);
  model::Point p = point_from(r);
  const double capacity = r["capacity_bytes"];
  const double value = largest_value_that_fits(*m, p, vary, capacity);
  json reply = {{"ok", true}, {"vary", vary}, {"value", value}, {"capacity_bytes", capacity}};
  if (value > 0) {
    p.values[vary] = value;
    const model::Prediction pred = m->predict(p);
    reply["peak_bytes"] = pred.value;
    reply["upper_bytes"] = pred.upper;
    model::put_extrapolation(reply, pred);
  }
  return reply;
}

}  // namespace memwatch::daemon
