// `memwatch status | workloads | runs | model`: the daemon's query ops, readable by default and
// as the daemon's JSON with --json.
#include <cstdio>
#include <ctime>
#include <span>
#include <string>

#include "args.hpp"
#include "memwatch/model/model_json.hpp"
#include "memwatch/protocol/parse.hpp"
#include "query_client.hpp"

namespace memwatch::cli {

using nlohmann::json;

namespace {

std::string mib(const json& bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", bytes.get<double>() / 1048576.0);
  return text;
}

// "store: URL unreachable since 19:30:02 UTC (why), 12 runs (3400 samples) queued locally in PATH"
void print_store_health(const json& store) {
  const long long runs = store.value("queued_runs", 0LL);
  const long long samples = store.value("queued_samples", 0LL);
  std::string state = "reachable";
  if (!store.value("reachable", true)) {
    const auto since = static_cast<std::time_t>(store.value("unreachable_since_unix_s", 0.0));
    char when[32] = "?";
    std::tm utc{};
    if (gmtime_r(&since, &utc) != nullptr) std::strftime(when, sizeof when, "%F %T UTC", &utc);
    state = std::string("unreachable since ") + when + " (" + store.value("error", "") + ")";
  } else if (runs == 0 && samples == 0) {
    return;  // nothing to say beyond the store line above
  }
  std::printf("store: %s %s, %lld runs (%lld samples) queued locally in %s",
              store.value("location", "").c_str(), state.c_str(), runs, samples,
              store.value("queue", "").c_str());
  if (const long long dropped = store.value("dropped_samples", 0LL); dropped > 0)
    std::printf(", %lld samples dropped (the queue was full)", dropped);
  std::printf("\n");
}

// name=value words as a JSON object of numbers.
json params_from_words(const std::vector<std::string>& words) {
  json params = json::object();
  for (const std::string& w : words) {
    const auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("expected name=number, got '" + w + "'");
    params[w.substr(0, eq)] = parse_number(std::string_view(w).substr(eq + 1), w.substr(0, eq));
  }
  return params;
}

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / 1073741824.0);
  return text;
}

// Parses `options` and runs `request`; prints JSON or hands the reply to `print`.
template <typename Print>
int query(std::span<char* const> argv, std::span<const Option> options, json request,
          std::vector<std::string> required, Print print) {
  const Args args(argv, options);
  for (const std::string& field : required) request[field] = args.required(field);
  if (!args.positional().empty()) request["params"] = params_from_words(args.positional());
  if (auto t = args.value("target")) request["target"] = *t;
  if (auto c = args.value("capacity")) {
    const std::int64_t bytes = protocol::parse_size(*c);
    if (bytes <= 0) throw UsageError("--capacity expects a size like 24GiB, got '" + *c + "'");
    request["capacity_bytes"] = bytes;
  }
  const json reply = ask_daemon(daemon_query(args), request);
  if (args.flag("json"))
    std::puts(reply.dump(2).c_str());
  else
    print(reply);
  return 0;
}

constexpr Option kJson{"json", "", "print the daemon's answer as JSON"};

constexpr Option kStatusOptions[] = {kQueryOption, kCurveKeysOption, kJson};
constexpr Option kRunsOptions[] = {kWorkloadOption, kQueryOption, kCurveKeysOption, kJson};
constexpr Option kModelOptions[] = {
    kWorkloadOption,
    {"target", "T", "the figure modelled: host_peak_bytes, device_peak_bytes, ..."},
    kQueryOption,
    kCurveKeysOption,
    kJson};

// "; extrapolating: ..." from a daemon's predict or max answer, "" within the runs.
std::string extrapolation_text(const json& r) {
  const std::string note = model::extrapolation_note(model::extrapolation_of(r));
  return note.empty() ? "" : "; " + note;
}

}  // namespace

std::string help_status() {
  return usage_text("status", {"[--query EP] [--curve-keys DIR] [--json]",
                               "The daemon's runs, workloads and samples, its store and its "
                               "sockets, and whether CurveZMQ is on.",
                               kStatusOptions});
}

std::string help_workloads() {
  return usage_text("workloads",
                    {"[--query EP] [--curve-keys DIR] [--json]",
                     "The workloads the daemon has runs of, with their counts.", kStatusOptions});
}

std::string help_runs() {
  return usage_text("runs", {"--workload W [--query EP] [--curve-keys DIR] [--json]",
                             "A workload's runs: status, host and device peaks, seconds and "
                             "parameters.",
                             kRunsOptions});
}

std::string help_model() {
  return usage_text("model", {"--workload W --target T [--query EP] [--curve-keys DIR] [--json]",
                              "The daemon's latest model of a workload's figure, as the JSON "
                              "`memwatch predict --model` reads.",
                              kModelOptions});
}

int cmd_status(std::span<char* const> argv) {
  return query(argv, kStatusOptions, {{"op", "status"}}, {}, [](const json& r) {
    std::printf("memwatchd: %lld runs (%lld running) of %lld workloads, %lld samples\n",
                r["runs"].get<long long>(), r["running"].get<long long>(),
                r["workloads"].get<long long>(), r["samples"].get<long long>());
    std::printf("store %s, ingest %s, up %.0f s\n", r["db"].get<std::string>().c_str(),
                r["ingest"].get<std::string>().c_str(), r["uptime_s"].get<double>());
    if (r.contains("store")) print_store_health(r["store"]);
    if (r.value("curve", false))
      std::printf("CurveZMQ on, %lld handshakes refused\n", r["refused_clients"].get<long long>());
  });
}

int cmd_workloads(std::span<char* const> argv) {
  return query(argv, kStatusOptions, {{"op", "workloads"}}, {}, [](const json& r) {
    for (const auto& w : r["workloads"])
      std::printf("%-30s %6lld runs\n", w["workload"].get<std::string>().c_str(),
                  w["runs"].get<long long>());
  });
}

int cmd_runs(std::span<char* const> argv) {
  return query(argv, kRunsOptions, {{"op", "runs"}}, {"workload"}, [](const json& r) {
    std::printf("%6s  %-9s %12s %12s %9s  %s\n", "id", "status", "host MiB", "device MiB",
                "seconds", "params");
    for (const auto& run : r["runs"])
      std::printf("%6lld  %-9s %12s %12s %9.1f  %s\n", run["id"].get<long long>(),
                  run["status"].get<std::string>().c_str(), mib(run["host_peak_bytes"]).c_str(),
                  mib(run["device_peak_bytes"]).c_str(), run["elapsed_s"].get<double>(),
                  params_text(run["params"]).c_str());
  });
}

int cmd_predict_daemon(std::span<char* const> argv, std::span<const Option> options) {
  return query(argv, options, {{"op", "predict"}}, {"workload"}, [](const json& r) {
    std::printf("%s\n  predicted %s, upper bound %s%s (from %lld runs)\n",
                r["formula"].get<std::string>().c_str(), gib(r["peak_bytes"]).c_str(),
                gib(r["upper_bytes"]).c_str(), extrapolation_text(r).c_str(),
                r["runs"].get<long long>());
  });
}

int cmd_max_daemon(std::span<char* const> argv, std::span<const Option> options) {
  return query(argv, options, {{"op", "max"}}, {"workload", "vary"}, [](const json& r) {
    if (r["value"].get<double>() <= 0) {
      std::printf("no value of %s fits in %s\n", r["vary"].get<std::string>().c_str(),
                  gib(r["capacity_bytes"]).c_str());
      return;
    }
    std::printf("largest %s that fits in %s: %g (predicted %s, upper bound %s%s)\n",
                r["vary"].get<std::string>().c_str(), gib(r["capacity_bytes"]).c_str(),
                r["value"].get<double>(), gib(r["peak_bytes"]).c_str(),
                gib(r["upper_bytes"]).c_str(), extrapolation_text(r).c_str());
  });
}

int cmd_model(std::span<char* const> argv) {
  return query(argv, kModelOptions, {{"op", "model"}}, {"workload", "target"},
               [](const json& r) { std::puts(r["model"].dump(2).c_str()); });
}

}  // namespace memwatch::cli
