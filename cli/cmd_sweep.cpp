// `memwatch sweep`: runs a command over every combination of a parameter grid under the shim and
// writes one CSV row per run, the dataset the modeler fits.
//
//   memwatch sweep --grid batch=1,2,4 --grid dim=32,48,64 --out runs.csv -- CMD {batch} {dim}
//   memwatch sweep --grid batch=2,4 --config-template train.yml --out runs.csv -- CMD --config
//   {config}
//
// Each run gets LD_PRELOAD (the shim), MEMWATCH_PARAMS and its own MEMWATCH_REPORT; the row holds
// what the report says. A run that fails or is killed still gets its row, with its status; a
// sweep that is interrupted leaves only whole rows behind, so `--resume` can finish it. The grid
// is sweep_grid.*, a run's process sweep_run.*, the file sweep_csv.*.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "memwatch/protocol/figures.hpp"
#include "shim_path.hpp"
#include "sweep_csv.hpp"
#include "sweep_grid.hpp"
#include "sweep_run.hpp"

namespace memwatch::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using protocol::FigureId;

struct SweepSettings {
  std::vector<Axis> axes;
  fs::path out;
  bool resume = false;
  std::size_t repeat = 1;
  std::optional<double> timeout_s;
  std::optional<std::string> workload;
  std::optional<std::string> config_template;  // its text; a run's copy replaces {config}
  std::string config_extension;                // the template's, for tools that look at it
  std::vector<std::string> command;
};

// Set from the signal handler; the main loop passes the signal on to the running command.
extern "C" void on_interrupt(int sig) {
  g_sweep_interrupt.store(sig);
}

std::string clock_text(double seconds) {
  auto s = static_cast<long>(std::lround(seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

std::string bytes_text(std::optional<std::int64_t> b) {
  if (!b) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(*b) / (1024.0 * 1024 * 1024));
  return buf;
}

void print_help() {
  std::string columns;
  for (const std::string& c : protocol::sweep_measure_columns()) columns += ", " + c;
  std::printf(
      "usage: memwatch sweep --grid NAME=V1,V2,... [--grid ...] --out FILE [--repeat N]\n"
      "                      [--resume] [--timeout SECONDS] [--shim PATH] [--workload NAME]\n"
      "                      [--config-template FILE] -- COMMAND [ARGS with {NAME}, {config}]\n"
      "Runs COMMAND for every combination of the grids under the shim and appends one CSV row\n"
      "per run: the parameters%s\n(exit_status: minus the signal for a killed run).\n"
      "--config-template FILE: each run gets a copy of FILE with its {NAME} filled in, and\n"
      "{config} in the command is that copy's path; other braces in FILE stay as they are.\n",
      columns.c_str());
}

void usage_check(const Args& args) {
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional().front() +
                     "' (the command to run goes after --)");
  if (args.rest().empty())
    throw UsageError(
        "no command to run: memwatch sweep --grid NAME=V1,V2 --out FILE -- CMD {NAME}");
}

SweepSettings read_settings(const Args& args) {
  usage_check(args);
  SweepSettings s;
  for (const auto& spec : args.values("grid")) {
    s.axes.push_back(parse_axis(spec));
    for (std::size_t a = 0; a + 1 < s.axes.size(); ++a)
      if (s.axes[a].name == s.axes.back().name)
        throw UsageError("--grid " + s.axes.back().name + " given twice");
  }
  s.out = args.required("out");
  s.resume = args.flag("resume");
  if (auto r = args.value("repeat")) {
    double v = parse_number(*r, "--repeat");
    if (v < 1 || v != std::floor(v) || v > 1e6)
      throw UsageError("--repeat must be a positive integer");
    s.repeat = static_cast<std::size_t>(v);
  }
  if (auto t = args.value("timeout")) {
    s.timeout_s = parse_number(*t, "--timeout");
    if (*s.timeout_s <= 0) throw UsageError("--timeout must be positive");
  }
  s.workload = args.value("workload");
  s.command = args.rest();
  std::vector<std::string> extra;
  if (auto path = args.value("config-template")) {
    std::ifstream in(*path);
    if (!in) throw UsageError("--config-template " + *path + ": " + std::strerror(errno));
    std::stringstream text;
    text << in.rdbuf();
    s.config_template = text.str();
    s.config_extension = fs::path(*path).extension().string();
    extra.push_back("config");
    bool used = false;
    for (const auto& word : s.command) used = used || word.find("{config}") != std::string::npos;
    if (!used)
      throw UsageError(
          "--config-template needs {config} in the command, where each run's file "
          "goes");
  }
  check_placeholders(s.command, s.axes, extra);
  return s;
}

// The run of one point: its command words filled in, and its config file written when there is
// a template.
RunSpec run_spec(const SweepSettings& s, const Point& p, std::size_t i, const fs::path& dir,
                 const fs::path& shim) {
  RunSpec spec;
  const std::string stem = "run-" + std::to_string(i);
  std::string config_path;
  if (s.config_template) {
    config_path = (dir / (stem + "-config" + s.config_extension)).string();
    std::ofstream(config_path) << substitute(*s.config_template, s.axes, p);
  }
  for (const auto& word : s.command) {
    std::string filled = substitute(word, s.axes, p);
    if (s.config_template) filled = replace_all(std::move(filled), "{config}", config_path);
    spec.argv.push_back(std::move(filled));
  }
  spec.params = describe(s.axes, p, ',');
  spec.report = dir / (stem + ".json");
  spec.log = dir / (stem + ".log");
  spec.shim = shim;
  spec.workload = s.workload;
  spec.timeout_s = s.timeout_s;
  return spec;
}

fs::path make_run_folder() {
  const char* tmp_env = std::getenv("TMPDIR");
  std::string tmp_template =
      std::string(tmp_env && *tmp_env ? tmp_env : "/tmp") + "/memwatch-sweep-XXXXXX";
  if (!mkdtemp(tmp_template.data()))
    throw std::runtime_error("mkdtemp " + tmp_template + ": " + std::strerror(errno));
  return tmp_template;
}

void report_progress(std::size_t i, std::size_t total, const std::string& point, const RunResult& r,
                     double elapsed) {
  const double left = elapsed / static_cast<double>(i + 1) * static_cast<double>(total - i - 1);
  std::fprintf(stderr, "[%zu/%zu] %s: %s %d, host peak %s, %.1f s | elapsed %s, about %s left\n",
               i + 1, total, point.c_str(), r.exit_status < 0 ? "signal" : "exit",
               std::abs(r.exit_status),
               bytes_text(r.figures[static_cast<std::size_t>(FigureId::host_peak)]).c_str(),
               r.elapsed_s, clock_text(elapsed).c_str(), clock_text(left).c_str());
  if (!r.log_tail.empty()) std::fputs(r.log_tail.c_str(), stderr);
}

}  // namespace

int cmd_sweep(std::span<char* const> argv) {
  Args args(argv, {"grid", "out", "repeat", "shim", "timeout", "workload", "config-template"},
            {"resume", "help"});
  if (args.flag("help")) {
    print_help();
    return 0;
  }
  const SweepSettings s = read_settings(args);
  const fs::path shim = find_shim(args.value("shim").value_or(""));

  std::map<std::string, std::size_t> done;
  const bool exists = fs::exists(s.out);
  if (exists && !s.resume)
    throw UsageError(s.out.string() + " exists: pass --resume to continue it, or remove it");
  if (exists) done = read_done(s.out, s.axes);
  std::size_t already = 0;
  const std::vector<Point> pending = pending_points(s.axes, s.repeat, done, already);

  std::FILE* csv = std::fopen(s.out.c_str(), "a");
  if (!csv) throw std::runtime_error("cannot open " + s.out.string() + ": " + std::strerror(errno));
  if (!exists || fs::file_size(s.out) == 0) {
    std::fprintf(csv, "%s\n", csv_header(s.axes).c_str());
    std::fflush(csv);
  }
  const fs::path run_dir = make_run_folder();

  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  std::fprintf(stderr, "memwatch sweep: %zu runs to do", pending.size());
  if (already) std::fprintf(stderr, " (%zu already in %s)", already, s.out.c_str());
  std::fprintf(stderr, ", shim %s\n", shim.c_str());

  const auto sweep_start = Clock::now();
  std::size_t failed = 0;
  int status = 0;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const Point& p = pending[i];
    const std::string point = describe(s.axes, p, ' ');
    std::fprintf(stderr, "[%zu/%zu] %s ...\n", i + 1, pending.size(), point.c_str());
    const RunResult r = run_one(run_spec(s, p, i, run_dir, shim));
    if (r.interrupted || g_sweep_interrupt.load()) {
      // The interrupted run's row is not written: --resume runs it again.
      std::fprintf(stderr,
                   "memwatch sweep: interrupted; %zu of %zu runs written to %s (--resume "
                   "continues)\n",
                   i, pending.size(), s.out.c_str());
      status = 128 + g_sweep_interrupt.load();
      break;
    }
    std::fputs(csv_row(s.axes, p, r).c_str(), csv);
    std::fflush(csv);
    if (r.exit_status != 0) ++failed;
    report_progress(i, pending.size(), point, r,
                    std::chrono::duration<double>(Clock::now() - sweep_start).count());
  }
  std::fclose(csv);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  std::error_code ec;
  fs::remove_all(run_dir, ec);
  if (status == 0)
    std::fprintf(
        stderr, "memwatch sweep: done, %zu runs (%zu failed) in %s, rows in %s\n", pending.size(),
        failed,
        clock_text(std::chrono::duration<double>(Clock::now() - sweep_start).count()).c_str(),
        s.out.c_str());
  return status;
}

}  // namespace memwatch::cli
