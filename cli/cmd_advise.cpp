// `memwatch advise`: sizes a batch job at submission (slurm/job_submit.lua calls it) and answers
// in one line of JSON, {"decision":"keep"|"set_mem"|"reject","mem_mb":N,...,"message":"..."}.
// The daemon is asked within a deadline; no answer, or no model, keeps the job as submitted.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "advice.hpp"
#include "args.hpp"
#include "memwatch/protocol/parse.hpp"
#include "query_client.hpp"

namespace memwatch::cli {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kRefusalWait{200};

constexpr Option kOptions[] = {
    {"workload", "W", "the job's workload"},
    {"params", "LIST", "the job's parameters, batch=8,dim=128"},
    {"mem-mb", "N", "the memory the job asks for, MiB (Slurm's --mem)"},
    {"gres", "TRES", "the job's generic resources (gpu:2, gres/gpu:a100:1)"},
    {"partition", "P", "the job's partition (for node_mem.P)"},
    {"settings", "FILE",
     "the site's settings as key = value lines: policy, node_mem, node_mem.PARTITION, gpu_mem, "
     "vary, deadline_ms (500), query, curve_keys; options win"},
    {"policy", "advise|fill|raise|reject",
     "advise: a message; fill: and a job without --mem gets the bound; raise: and a --mem below "
     "the bound is raised to it; reject: and a job that fits no node or GPU is refused "
     "(docs/slurm.md)"},
    {"node-mem", "SIZE", "a node's memory in the job's partition"},
    {"gpu-mem", "SIZE", "one GPU's memory in the job's partition"},
    {"vary", "P", "the parameter the message names the largest fitting value of"},
    {"deadline-ms", "N", "answer within N ms; no answer from the daemon by then keeps the job"},
    kQueryOption,
    kCurveKeysOption,
};

constexpr Usage kUsage{
    "--workload W --params LIST [--mem-mb N] [--gres TRES] [--partition P] [--settings FILE] "
    "[options]",
    "Prints one line of JSON: the decision for the job (keep, set_mem with mem_mb, reject) and a "
    "message for the user. No answer within the deadline, or no model, keeps the job as "
    "submitted.",
    kOptions};

// Bad input from the job (its parameters, its workload, its GPUs): the job is refused with this.
struct JobInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The site's settings file: key = value lines, '#' comments.
std::map<std::string, std::string> read_settings(const std::string& path) {
  std::map<std::string, std::string> settings;
  std::ifstream in(path);
  if (!in) throw UsageError("--settings: cannot read '" + path + "'");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto trim = [](std::string s) {
      const auto first = s.find_first_not_of(" \t\r");
      const auto last = s.find_last_not_of(" \t\r");
      return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
    };
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw UsageError(path + ":" + std::to_string(number) + ": expected key = value");
    settings[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return settings;
}

// The job's parameters, read as the shim reads MEMWATCH_PARAMS (protocol/parse.hpp).
json parse_params(const std::string& text) {
  json params = json::object();
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.find_first_not_of(" \t") == std::string_view::npos) continue;
    std::string_view name;
    double value = 0;
    if (!protocol::parse_param(item, name, value))
      throw JobInputError("--memwatch-params '" + text + "': expected " +
                          std::string(protocol::kParamListForm) + ", got '" + std::string(item) +
                          "'");
    params[std::string(name)] = value;
  }
  return params;
}

std::int64_t size_setting(const std::string& text, const std::string& what) {
  const std::int64_t bytes = protocol::parse_size(text);
  if (bytes <= 0) throw UsageError(what + " expects a size like 512GiB, got '" + text + "'");
  return bytes;
}

// Asks the daemon within what is left of the deadline; none when it has no model to answer
// with (the daemon says ok:false).
std::optional<json> ask_within(const DaemonQuery& daemon, const json& request,
                               Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) throw DaemonUnreachable("the deadline passed");
  try {
    return ask_daemon(daemon, request, left);
  } catch (const DaemonUnreachable&) {
    throw;
  } catch (const UsageError&) {
    throw;
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

struct Inputs {
  std::string policy_name;
  SizingPolicy policy = SizingPolicy::advise;
  JobRequest job;
  json params;
  std::chrono::milliseconds deadline{500};  // the queries take milliseconds
  DaemonQuery daemon;
};

Inputs read_inputs(const Args& args) {
  std::map<std::string, std::string> site;
  if (auto path = args.value("settings")) site = read_settings(*path);
  const auto setting = [&](const std::string& option,
                           const std::string& key) -> std::optional<std::string> {
    if (auto v = args.value(option)) return v;
    if (auto it = site.find(key); it != site.end() && !it->second.empty()) return it->second;
    return std::nullopt;
  };
  Inputs in;
  in.policy_name = setting("policy", "policy").value_or("advise");
  const auto policy = sizing_policy_from(in.policy_name);
  if (!policy)
    throw UsageError("policy must be advise, fill, raise or reject, got '" + in.policy_name + "'");
  in.policy = *policy;
  if (auto ms = setting("deadline-ms", "deadline_ms")) {
    const double value = parse_number(*ms, "deadline_ms");
    if (!(value > 0 && value <= 60000)) throw UsageError("deadline_ms must be in (0, 60000]");
    in.deadline = std::chrono::milliseconds(static_cast<long>(value));
  }
  in.daemon = daemon_query(args);
  if (!args.value("query") && site.contains("query")) in.daemon.endpoint = site["query"];
  if (!args.value("curve-keys") && site.contains("curve_keys"))
    in.daemon.curve_keys = site["curve_keys"];

  const std::string partition = args.value("partition").value_or("");
  auto node_mem = setting("node-mem", "node_mem." + partition);
  if (!node_mem) node_mem = setting("node-mem", "node_mem");
  if (node_mem) in.job.node_mem_bytes = size_setting(*node_mem, "node_mem");
  auto gpu_mem = setting("gpu-mem", "gpu_mem." + partition);
  if (!gpu_mem) gpu_mem = setting("gpu-mem", "gpu_mem");
  if (gpu_mem) in.job.gpu_mem_bytes = size_setting(*gpu_mem, "gpu_mem");
  in.job.vary = setting("vary", "vary").value_or("");

  // What the job says; a mistake here is the user's, and refuses the job.
  in.job.workload = args.value("workload").value_or("");
  if (!in.job.workload.empty() && !protocol::valid_name(in.job.workload))
    throw JobInputError("--memwatch='" + in.job.workload +
                        "': a workload name is letters, digits, '_', '-', '.' (at most 63)");
  in.params = parse_params(args.value("params").value_or(""));
  if (auto mem = args.value("mem-mb")) {
    const double mib = parse_number(*mem, "--mem-mb");
    if (!(mib >= 0)) throw UsageError("--mem-mb must be a number of MiB, got '" + *mem + "'");
    in.job.mem_bytes = static_cast<std::int64_t>(mib * 1048576.0);
  }
  try {
    in.job.gpus = gpus_in_tres(args.value("gres").value_or(""));
  } catch (const std::invalid_argument& e) {
    throw JobInputError(std::string("--gres: ") + e.what());
  }
  return in;
}

// The bound of one target, and where it does not fit `capacity`, the largest fitting value.
std::optional<Bound> bound_of(const Inputs& in, const std::string& target,
                              std::optional<double> capacity, Clock::time_point deadline) {
  const json request = {
      {"op", "predict"}, {"workload", in.job.workload}, {"params", in.params}, {"target", target}};
  const auto reply = ask_within(in.daemon, request, deadline);
  if (!reply) return std::nullopt;
  Bound bound{(*reply)["peak_bytes"].get<double>(), (*reply)["upper_bytes"].get<double>(), {}};
  if (capacity && bound.upper_bytes > *capacity && !in.job.vary.empty() &&
      in.params.contains(in.job.vary)) {
    json max = request;
    max["op"] = "max";
    max["vary"] = in.job.vary;
    max["capacity_bytes"] = *capacity;
    if (const auto fits = ask_within(in.daemon, max, deadline))
      bound.largest_fitting = (*fits)["value"].get<double>();
  }
  return bound;
}

void answer(const std::string& decision, const json& figures, const std::string& message) {
  nlohmann::ordered_json out = {{"decision", decision}};
  for (const auto& [key, value] : figures.items()) out[key] = value;
  out["message"] = message;  // last, so a script can take the rest of the line
  std::puts(out.dump(-1, ' ', /*ensure_ascii=*/true).c_str());
}

}  // namespace

std::string help_advise() {
  return usage_text("advise", kUsage);
}

int cmd_advise(std::span<char* const> argv) {
  const auto started = Clock::now();
  Inputs in;
  try {
    const Args args(argv, kOptions);
    in = read_inputs(args);
  } catch (const JobInputError& e) {
    answer("reject", json::object(), std::string("memwatch: ") + e.what());
    return 0;
  } catch (const std::exception& e) {
    // The site's mistake, not the job's: say it, and leave the job alone.
    answer("keep", {{"error", e.what()}}, std::string("memwatch: advise: ") + e.what());
    return 2;
  }
  if (in.job.workload.empty()) {
    const bool has_params = !in.params.empty();
    answer("keep", json::object(),
           has_params ? "memwatch: name the workload (--memwatch=NAME) to have the job sized" : "");
    return 0;
  }

  const auto deadline = started + in.deadline;
  // A daemon's host that is up without the daemon says so at once: no need to wait it out.
  if (daemon_refuses_connection(in.daemon.endpoint, kRefusalWait)) {
    answer("keep", {{"error", "connection refused"}},
           "memwatch: memwatchd is not running at " + in.daemon.endpoint +
               "; the job is left as submitted");
    return 0;
  }
  std::optional<Bound> host, device;
  try {
    std::optional<double> node, gpus;
    if (in.job.node_mem_bytes) node = static_cast<double>(*in.job.node_mem_bytes);
    if (in.job.gpu_mem_bytes && in.job.gpus > 0)
      gpus = static_cast<double>(*in.job.gpu_mem_bytes) * in.job.gpus;
    host = bound_of(in, "host_peak_bytes", node, deadline);
    device = bound_of(in, "device_peak_bytes", gpus, deadline);
  } catch (const std::exception& e) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(in.deadline).count();
    answer("keep", {{"error", e.what()}},
           "memwatch: no answer from memwatchd within " + std::to_string(ms) +
               " ms; the job is left as submitted");
    return 0;
  }
  if (!host && !device) {
    answer("keep", json::object(),
           "memwatch: no model of " + in.job.workload + " yet; the job is left as submitted");
    return 0;
  }
  const Advice advice = advise_job(in.policy, in.job, host, device);
  json figures = json::object();
  if (advice.decision == Advice::Decision::set_mem) figures["mem_mb"] = advice.mem_mib;
  figures["policy"] = in.policy_name;
  if (host) {
    figures["host_peak_bytes"] = host->peak_bytes;
    figures["host_upper_bytes"] = host->upper_bytes;
  }
  if (device) {
    figures["device_peak_bytes"] = device->peak_bytes;
    figures["device_upper_bytes"] = device->upper_bytes;
  }
  answer(std::string(decision_name(advice.decision)), figures, advice.message);
  return 0;
}

}  // namespace memwatch::cli
