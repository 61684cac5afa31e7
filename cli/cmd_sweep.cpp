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
// is sweep_grid.*, a run's process sweep_run.*, the file sweep_csv.*. With --auto the sweep picks
// its own points toward a target instead of running the whole grid (sweep_auto.*).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "args.hpp"
#include "memwatch/protocol/figures.hpp"
#include "shim_path.hpp"
#include "sweep_auto.hpp"
#include "sweep_csv.hpp"
#include "sweep_grid.hpp"
#include "sweep_run.hpp"
#include "sweep_settings.hpp"

namespace memwatch::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void report_progress(std::size_t i, std::size_t total, const std::string& point, const RunResult& r,
                     double elapsed) {
  const double left = elapsed / static_cast<double>(i + 1) * static_cast<double>(total - i - 1);
  std::fprintf(stderr, "[%zu/%zu] %s: %s %d, host peak %s, %.1f s | elapsed %s, about %s left\n",
               i + 1, total, point.c_str(), r.exit_status < 0 ? "signal" : "exit",
               std::abs(r.exit_status), gib_text(figure_of(r, "host_peak_bytes")).c_str(),
               r.elapsed_s, clock_text(elapsed).c_str(), clock_text(left).c_str());
  if (!r.log_tail.empty()) std::fputs(r.log_tail.c_str(), stderr);
}

}  // namespace

std::string help_sweep() {
  std::string columns;
  for (const std::string& c : protocol::sweep_measure_columns()) columns += ", " + c;
  const std::string about =
      "Runs COMMAND for every combination of the grids under the shim and appends one CSV row "
      "per run: the parameters" +
      columns + " (exit_status: minus the signal for a killed run).";
  return usage_text("sweep", {"--grid NAME=V1,V2,... [--grid ...] --out FILE [options] -- "
                              "COMMAND [ARGS with {NAME}, {config}]\n"
                              "--auto [--toward NAME=V,...] [--budget-runs N] --grid ... --out "
                              "FILE [options] -- COMMAND ...",
                              about, kSweepOptions});
}

int cmd_sweep(std::span<char* const> argv) {
  const Args args(argv, kSweepOptions);
  const SweepSettings s = read_sweep_settings(args);
  const fs::path shim = find_shim(args.value("shim").value_or(""));
  if (args.flag("auto")) return sweep_auto(s, read_auto_settings(args, s), shim);
  if (auto_only_option(args))
    throw UsageError("--" + *auto_only_option(args) + " goes with --auto");

  std::map<std::string, std::size_t> done;
  if (s.resume && fs::exists(s.out)) done = read_done(s.out, s.axes);
  std::size_t already = 0;
  const std::vector<Point> pending = pending_points(s.axes, s.repeat, done, already);

  std::FILE* csv = open_rows(s.out, s.axes, s.resume);
  const fs::path run_dir = make_run_folder();

  const InterruptCatcher catcher;

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
