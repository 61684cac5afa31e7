#include "query.hpp"

namespace memwatch::daemon {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxRequest = 64 * 1024;

json failure(const std::string& why) { return {{"ok", false}, {"error", why}}; }

}  // namespace

json run_json(const Run& r) {
  json params = json::object();
  for (const auto& [name, value] : r.params) {
    if (value == static_cast<double>(static_cast<std::int64_t>(value)))
      params[name] = static_cast<std::int64_t>(value);
    else
      params[name] = value;
  }
  return {{"id", r.id},
          {"workload", r.workload},
          {"params", params},
          {"host", r.host},
          {"pid", r.pid},
          {"status", status_name(r.status)},
          {"started", r.started_unix_s},
          {"elapsed_s", r.elapsed_s},
          {"host_peak_bytes", r.host_peak_bytes},
          {"heap_peak_bytes", r.heap_peak_bytes},
          {"mmap_peak_bytes", r.mmap_peak_bytes},
          {"device_peak_bytes", r.device_peak_bytes},
          {"rss_hwm_bytes", r.rss_hwm_bytes},
          {"exit_cause", r.exit_cause},
          {"samples", r.samples}};
}

QueryTable::QueryTable(QueryContext context) : context_(std::move(context)) {
  ops_ = {
      {"status", {}, &QueryTable::op_status},
      {"workloads", {}, &QueryTable::op_workloads},
      {"runs", {"workload"}, &QueryTable::op_runs},
      {"model", {"workload", "target"}, &QueryTable::op_model},
  };
}

std::string QueryTable::answer(std::string_view request) const {
  try {
    if (request.size() > kMaxRequest)
      return failure("request too large (at most 64 KiB)").dump();
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

}  // namespace memwatch::daemon
