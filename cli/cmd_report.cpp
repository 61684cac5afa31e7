// `memwatch report --slurm JOBID | --user U [--last N]`: a Slurm job's memory, what it requested
// (the controller's record), what the workload's model predicts for its parameters, what its
// runs measured (host and GPU), and what the request should have been.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "args.hpp"
#include "query_client.hpp"
#include "slurm_job.hpp"

namespace memwatch::cli {

namespace {

using nlohmann::json;

constexpr double kMiB = 1048576.0;  // Slurm's M

constexpr Option kOptions[] = {
    {"slurm", "JOBID", "the job"},
    {"user", "USER", "the user's last jobs instead"},
    {"last", "N", "with --user: how many (default 10)"},
    {"json", "", "print the reports as JSON"},
    kQueryOption,
    kCurveKeysOption,
};

constexpr Usage kUsage{
    "--slurm JOBID [--query EP] [--curve-keys DIR] [--json]\n"
    "--user USER [--last N] [...]",
    "Requested (scontrol), predicted and bound (the workload's model now), measured (the job's "
    "runs in memwatchd: the largest of its steps' peaks), and the request it should have made: "
    "the measured peak, rounded up to a MiB.",
    kOptions};

bool of_job(const json& run, const std::string& id) {
  const std::string tag = run.value("scheduler_job", std::string());
  return tag == id || tag.starts_with(id + ".");
}

// Every run the daemon has that belongs to a Slurm job, with its workload.
std::vector<json> slurm_runs(const DaemonQuery& daemon) {
  std::vector<json> runs;
  const json workloads = ask_daemon(daemon, {{"op", "workloads"}});
  for (const json& w : workloads["workloads"]) {
    const json of_workload = ask_daemon(daemon, {{"op", "runs"}, {"workload", w["workload"]}});
    for (const json& run : of_workload["runs"])
      if (!run.value("scheduler_job", std::string()).empty()) runs.push_back(run);
  }
  return runs;
}

std::optional<json> prediction(const DaemonQuery& daemon, const json& run,
                               const std::string& target) {
  try {
    return ask_daemon(daemon, {{"op", "predict"},
                               {"workload", run["workload"]},
                               {"params", run["params"]},
                               {"target", target}});
  } catch (const DaemonUnreachable&) {
    throw;
  } catch (const std::runtime_error&) {
    return std::nullopt;  // no model of that target
  }
}

json memory_figures(std::optional<std::int64_t> requested, std::optional<json> predicted,
                    std::int64_t measured) {
  json m = json::object();
  m["requested_bytes"] = requested ? json(*requested) : json(nullptr);
  m["predicted_bytes"] = predicted ? (*predicted)["peak_bytes"] : json(nullptr);
  m["upper_bytes"] = predicted ? (*predicted)["upper_bytes"] : json(nullptr);
  m["measured_bytes"] = measured;
  constexpr std::int64_t mib = 1 << 20;
  m["should_request_bytes"] = (measured + mib - 1) / mib * mib;
  return m;
}

json job_report(const DaemonQuery& daemon, const std::string& id,
                const std::optional<SlurmJob>& slurm, const std::vector<json>& all_runs) {
  json report = {{"job", id}};
  if (slurm) {
    report["user"] = slurm->user;
    report["state"] = slurm->state;
    report["partition"] = slurm->partition;
  }
  const json* largest = nullptr;  // the run with the largest host peak: the job's figure
  std::int64_t device_measured = 0;
  json runs = json::array(), nodes = json::array();
  for (const json& run : all_runs) {
    if (!of_job(run, id)) continue;
    runs.push_back({{"run", run["id"]},
                    {"step", run["scheduler_job"]},
                    {"node", run["host"]},
                    {"status", run["status"]},
                    {"host_peak_bytes", run["host_peak_bytes"]},
                    {"device_peak_bytes", run["device_peak_bytes"]}});
    if (std::find(nodes.begin(), nodes.end(), run["host"]) == nodes.end())
      nodes.push_back(run["host"]);
    if (largest == nullptr || run["host_peak_bytes"] > (*largest)["host_peak_bytes"])
      largest = &run;
    device_measured = std::max(device_measured, run["device_peak_bytes"].get<std::int64_t>());
  }
  report["runs"] = runs;
  report["nodes"] = nodes;
  if (largest == nullptr) return report;
  report["workload"] = (*largest)["workload"];
  report["params"] = (*largest)["params"];
  report["host"] = memory_figures(slurm ? slurm->mem_bytes : std::nullopt,
                                  prediction(daemon, *largest, "host_peak_bytes"),
                                  (*largest)["host_peak_bytes"].get<std::int64_t>());
  report["device"] = memory_figures(std::nullopt, prediction(daemon, *largest, "device_peak_bytes"),
                                    device_measured);
  report["device"]["gpus"] = slurm ? slurm->gpus : 0;
  return report;
}

std::string mib(const json& bytes) {
  if (!bytes.is_number()) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", bytes.get<double>() / kMiB);
  return text;
}

void print_job(const json& r) {
  std::printf("job %s", r["job"].get<std::string>().c_str());
  if (r.contains("state"))
    std::printf(" (%s, %s)", r["user"].get<std::string>().c_str(),
                r["state"].get<std::string>().c_str());
  if (!r.contains("workload")) {
    std::printf(": no memwatch run stored for it\n");
    return;
  }
  std::string nodes;
  for (const json& n : r["nodes"]) nodes += (nodes.empty() ? "" : ",") + n.get<std::string>();
  std::printf(": %s %s, %zu run(s) on %s\n", r["workload"].get<std::string>().c_str(),
              params_text(r["params"]).c_str(), r["runs"].size(), nodes.c_str());
  std::printf("  %-6s %14s %14s %14s %14s %16s\n", "", "requested", "predicted", "bound",
              "measured", "should request");
  const json& h = r["host"];
  std::printf("  %-6s %14s %14s %14s %14s %16s\n", "host", mib(h["requested_bytes"]).c_str(),
              mib(h["predicted_bytes"]).c_str(), mib(h["upper_bytes"]).c_str(),
              mib(h["measured_bytes"]).c_str(), mib(h["should_request_bytes"]).c_str());
  const json& d = r["device"];
  const std::string gpus = std::to_string(d["gpus"].get<int>()) + " GPU(s)";
  std::printf("  %-6s %14s %14s %14s %14s %16s\n", "GPU", gpus.c_str(),
              mib(d["predicted_bytes"]).c_str(), mib(d["upper_bytes"]).c_str(),
              mib(d["measured_bytes"]).c_str(), mib(d["should_request_bytes"]).c_str());
}

}  // namespace

std::string help_report() {
  return usage_text("report", kUsage);
}

int cmd_report(std::span<char* const> argv) {
  const Args args(argv, kOptions);
  const auto id = args.value("slurm");
  const auto user = args.value("user");
  if (id.has_value() == user.has_value())
    throw UsageError("give either --slurm JOBID or --user USER");
  const DaemonQuery daemon = daemon_query(args);
  const std::vector<json> runs = slurm_runs(daemon);
  json reports = json::array();
  try {
    if (id) {
      reports.push_back(job_report(daemon, *id, slurm_job(*id), runs));
    } else {
      const double last = parse_number(args.value("last").value_or("10"), "--last");
      if (!(last >= 1)) throw UsageError("--last must be at least 1");
      for (const SlurmJob& job : slurm_jobs_of(*user)) {
        if (reports.size() >= static_cast<std::size_t>(last)) break;
        reports.push_back(job_report(daemon, job.id, job, runs));
      }
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (args.flag("json")) {
    std::puts(json({{"jobs", reports}}).dump().c_str());
    return 0;
  }
  if (reports.empty())
    std::printf("no Slurm job of %s is known to the controller\n", user->c_str());
  for (const json& r : reports) print_job(r);
  return 0;
}

}  // namespace memwatch::cli
