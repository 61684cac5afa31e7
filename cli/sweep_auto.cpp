#include "sweep_auto.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <utility>

#include "memwatch/model/model.hpp"
#include "memwatch/model/model_json.hpp"
#include "memwatch/protocol/figures.hpp"
#include "memwatch/protocol/wire.hpp"
#include "model_io.hpp"
#include "sweep_csv.hpp"
#include "sweep_plan.hpp"
#include "sweep_run.hpp"

namespace memwatch::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Each run may use at most this share of the target's predicted memory.
constexpr double kCapShare = 1.0 / 8;
// The fewest runs the law is fitted on before the smaller runs are checked against it (refit).
constexpr std::size_t kCoreRuns = 5;
// The fitted peaks must span this many tolerances before the bound may end the sweep (grows).
constexpr double kGrowthTolerances = 5;

// "2%" or "0.02".
double parse_share(const std::string& text, const std::string& what) {
  const bool percent = !text.empty() && text.back() == '%';
  const double v = parse_number(percent ? text.substr(0, text.size() - 1) : text, what);
  return percent ? v / 100 : v;
}

std::vector<double> read_target(const Args& args, const SweepSettings& s) {
  std::vector<double> target;
  for (const Axis& axis : s.axes) {
    double largest = -INFINITY;
    for (const auto& v : axis.values) largest = std::max(largest, parse_number(v, axis.name));
    target.push_back(largest);
  }
  for (const auto& spec : args.values("toward"))
    for (const auto& item : split(spec, ',')) {
      const auto eq = item.find('=');
      if (eq == std::string::npos)
        throw UsageError("--toward expects NAME=V,..., got '" + item + "'");
      const std::string name = item.substr(0, eq);
      const auto axis =
          std::find_if(s.axes.begin(), s.axes.end(), [&](const Axis& a) { return a.name == name; });
      if (axis == s.axes.end()) throw UsageError("--toward " + name + ": no --grid " + name);
      const double v = parse_number(item.substr(eq + 1), "--toward " + name);
      const auto at = static_cast<std::size_t>(axis - s.axes.begin());
      // A parameter with one value is no parameter of the model: it cannot be extrapolated.
      if (axis->values.size() == 1 && v != target[at])
        throw UsageError("--toward " + name + "=" + item.substr(eq + 1) + ": the grid holds " +
                         name + " at " + axis->values.front() + "; give it that value's grid");
      target[at] = v;
    }
  return target;
}

struct Fitted {
  model::Model model;
  model::Prediction at_target;
  std::size_t runs_in_part = 0;  // runs the target's part was fitted on
  std::size_t coefficients = 0;
  std::vector<std::vector<double>> fitted;  // the parameters of the runs it was fitted on
  double growth = 0;                        // the largest fitted peak over the smallest, less one
};

std::optional<Fitted> fit_runs(const Planner& planner, const std::vector<const Measured*>& runs,
                               const std::string& measure, const model::FitOptions& options) {
  model::Dataset d;
  d.params = planner.parameter_names();
  d.target = measure;
  for (const Measured* r : runs) d.add(planner.parameters_of(r->values), *r->peak);
  Fitted f;
  try {
    f.model = model::fit(d, options);
  } catch (const model::FitError&) {
    return std::nullopt;  // too few runs for the modeler yet: more cheap runs first
  }
  const model::Point target = planner.model_point(planner.target);
  const model::SubModel& part = f.model.part_for(target);
  f.at_target = f.model.predict(target);
  f.runs_in_part = part.runs;
  f.coefficients = part.function.features.size() + 1;
  double lowest = INFINITY, highest = 0;
  for (const auto& row : d.rows) {
    f.fitted.push_back(row.x);
    lowest = std::min(lowest, row.y);
    highest = std::max(highest, row.y);
  }
  f.growth = highest / lowest - 1;
  return f;
}

// How far the law of `runs` (largest peak first) fitted without the largest misses it: the
// extrapolation the sweep makes, one run short of the target.
double miss_at_largest(const Planner& planner, const std::vector<const Measured*>& runs,
                       const std::string& measure, const model::FitOptions& options) {
  if (runs.size() < 3) return INFINITY;
  const std::vector<const Measured*> rest(runs.begin() + 1, runs.end());
  const auto law = fit_runs(planner, rest, measure, options);
  if (!law) return INFINITY;
  const double expected = law->model.predict(planner.model_point(runs.front()->values)).value;
  return expected > 0 ? std::abs(*runs.front()->peak / expected - 1) : INFINITY;
}

// Runs whose peak is near the smallest are held up by what the trainer allocates whatever its
// parameters (weights, optimizer state, start-up): at unet3d-train's smallest points the peak is
// 228 MiB where the activations' law gives 175, another phase's peak that the target, far above,
// never sees; fitted with the rest they pull the slope down (13% under at the target). So the
// law is fitted on the larger half of the runs, and a smaller run joins the fit only where its
// peak is within half the tolerance of that law: small runs jag by a percent or two about it
// (levels 4, F=8, 24^3, batch 8 lies 3.4% under), which the extrapolation multiplies.
// A law that gives a smaller run no memory at all is no law that run sits above by a floor: it
// is the larger runs' jags fitted (a GPU trainer's peaks jag by +-10% from shape to shape, as
// cuDNN picks its algorithms per shape: five runs up to 64^3 fit 111206·dim²·batch + 1.26e7·dim
// − 8.7e8, -62% at 192^3, where all seven fit dim³·batch, -8%). Then every run is fitted.
// Nor is the law of the agreeing runs kept where the law of every run, fitted without the
// largest, extrapolates to it better: with the jags few smaller runs agree, and the five larger
// fit them (1174·dim³·batch + 1.2e8·batch from runs up to 128^3, -25% at 192^3; every run's law
// misses 128^3 by less and ends at -10%; a floor's runs pull every run's law off the largest).
std::optional<Fitted> refit(const Planner& planner, const std::vector<Measured>& runs,
                            const std::string& measure, double tolerance,
                            const model::FitOptions& options) {
  if (!planner.covered(runs)) return std::nullopt;
  std::vector<const Measured*> measured;
  for (const auto& r : runs)
    if (r.peak && *r.peak > 0) measured.push_back(&r);
  std::sort(measured.begin(), measured.end(),
            [](const Measured* a, const Measured* b) { return *a->peak > *b->peak; });
  const std::size_t larger = std::max(kCoreRuns, (measured.size() + 1) / 2);
  if (measured.size() <= larger) return fit_runs(planner, measured, measure, options);
  const std::vector<const Measured*> core(measured.begin(),
                                          measured.begin() + static_cast<std::ptrdiff_t>(larger));
  const auto law = fit_runs(planner, core, measure, options);
  if (!law) return fit_runs(planner, measured, measure, options);
  std::vector<const Measured*> agreeing = core;
  for (std::size_t i = larger; i < measured.size(); ++i) {
    const double expected = law->model.predict(planner.model_point(measured[i]->values)).value;
    if (!(expected > 0)) return fit_runs(planner, measured, measure, options);
    if (std::abs(*measured[i]->peak / expected - 1) <= tolerance / 2)
      agreeing.push_back(measured[i]);
  }
  if (agreeing.size() == measured.size()) return fit_runs(planner, measured, measure, options);
  if (miss_at_largest(planner, measured, measure, options) <
      miss_at_largest(planner, agreeing, measure, options))
    return fit_runs(planner, measured, measure, options);
  if (agreeing.size() == core.size()) return law;
  return fit_runs(planner, agreeing, measure, options);
}

// Runs whose peaks hardly differ show a floor (what the trainer holds whatever its parameters),
// not the law: a model of them is flat and its bound tight, and says nothing of the target.
bool grows(const Fitted& f, double tolerance) {
  return f.growth > kGrowthTolerances * tolerance;
}

// The largest peak a next run may have: kCapShare of the target's prediction, or, where a law of
// growing runs predicts less, the largest run already made. Laws from a few runs near a trainer's
// floor swing by several times from one run to the next (a transformer's, 100 MiB of floor under
// 2.5 GiB at its target, fell from 27 to 0.41 GiB at its eighth run, its cap then under every
// run), and a sweep that stopped there would keep the worst of them; one that keeps to sizes it
// has run spends nothing it had not spent, and its next runs settle the law. A flat law (a floor)
// predicts every point at the floor and would let any point under it: no run then.
double run_cap(const Fitted& f, const std::vector<Measured>& runs, double tolerance) {
  double largest = 0;
  if (grows(f, tolerance))
    for (const auto& r : runs)
      if (r.peak) largest = std::max(largest, *r.peak);
  return std::max(f.at_target.value * kCapShare, largest);
}

double relative_headroom(const Fitted& f) {
  return (f.at_target.upper - f.at_target.value) / f.at_target.value;
}

// The bound is only trusted to end the sweep with runs to spare over the coefficients (on as
// many runs as coefficients every leave-one-out fit is exact and the bound says nothing), and
// when the last run moved the prediction by less than the tolerance: a bound from five runs is
// their largest leave-one-out value, and a law fitted on the smallest runs can agree with itself
// there and still change its mind at the next, larger run.
bool settled(const Fitted& now, const std::optional<Fitted>& before, double tolerance) {
  if (!before || now.runs_in_part < std::max<std::size_t>(kCoreRuns, now.coefficients + 3))
    return false;
  if (!grows(now, tolerance)) return false;
  return std::abs(now.at_target.value / before->at_target.value - 1) <= tolerance &&
         relative_headroom(now) <= tolerance && now.at_target.vouched;
}

// Seconds a run of `expected` bytes should take: the runs' median time per byte.
double expected_seconds(const std::vector<Measured>& runs, double expected) {
  std::vector<double> per_byte;
  for (const auto& r : runs)
    if (r.peak && *r.peak > 0) per_byte.push_back(r.elapsed_s / *r.peak);
  if (per_byte.empty()) return 0;
  std::nth_element(per_byte.begin(), per_byte.begin() + per_byte.size() / 2, per_byte.end());
  return per_byte[per_byte.size() / 2] * expected;
}

std::string point_text(const std::vector<Axis>& axes, const std::vector<double>& values) {
  std::string s;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].values.size() == 1) continue;
    char v[32];
    std::snprintf(v, sizeof v, "%g", values[a]);
    s += (s.empty() ? "" : " ") + axes[a].name + "=" + v;
  }
  return s;
}

std::string model_text(const std::optional<Fitted>& f, const std::vector<Measured>& runs,
                       double tolerance) {
  if (!f) return "no model yet";
  char buf[160];
  std::snprintf(buf, sizeof buf, "target %s, bound +%.1f%% (%s %.3g%%), cap %s, fit on %zu runs",
                gib_text(f->at_target.value).c_str(), relative_headroom(*f) * 100,
                relative_headroom(*f) <= tolerance ? "within" : "over", tolerance * 100,
                gib_text(run_cap(*f, runs, tolerance)).c_str(), f->fitted.size());
  return buf;
}

// The figure a sweep models when --measure names none: the device's peak where the program used a
// device (what runs out on a GPU), else the host's; as `memwatch fit` picks.
std::string measure_for(std::optional<double> device_peak) {
  return device_peak && *device_peak > 0 ? protocol::kDevicePeakTarget : protocol::kHostPeakTarget;
}

}  // namespace

std::optional<std::string> auto_only_option(const Args& args) {
  for (const Option& o : kAutoOnlyOptions)
    if (args.value(o.name)) return std::string(o.name);
  return std::nullopt;
}

AutoSettings read_auto_settings(const Args& args, const SweepSettings& s) {
  if (s.repeat != 1) throw UsageError("--repeat does not go with --auto: it picks its own runs");
  if (s.axes.empty()) throw UsageError("--auto needs --grid NAME=V1,V2,... to pick runs from");
  AutoSettings a;
  a.target = read_target(args, s);
  if (auto n = args.value("budget-runs")) {
    a.budget_runs = parse_count(*n, "--budget-runs", 1, 1'000'000);
  } else if (args.value("budget-minutes")) {
    a.budget_runs = static_cast<std::size_t>(-1);  // the minutes alone bound the sweep
  }
  if (auto m = args.value("budget-minutes")) {
    a.budget_minutes = parse_number(*m, "--budget-minutes");
    if (*a.budget_minutes <= 0) throw UsageError("--budget-minutes must be positive");
  }
  if (auto t = args.value("tolerance")) {
    a.tolerance = parse_share(*t, "--tolerance");
    if (!(a.tolerance > 0)) throw UsageError("--tolerance must be positive (2% or 0.02)");
  }
  if (auto m = args.value("measure")) {
    const auto& columns = protocol::sweep_measure_columns();
    if (std::find(columns.begin(), columns.end(), *m) == columns.end() || !m->ends_with("_bytes"))
      throw UsageError("--measure " + *m + ": not a memory column of the sweep's rows");
    a.measure = *m;
  }
  if (auto out = args.value("model-out")) a.model_out = *out;
  if (auto axes = args.value("axes")) {
    a.stated_axes = axes_option(*axes);
    for (const auto& [name, count] : a.stated_axes)
      if (std::none_of(s.axes.begin(), s.axes.end(), [&](const Axis& g) { return g.name == name; }))
        throw UsageError("--axes " + name + "=" + std::to_string(count) +
                         ": no --grid parameter is called " + name);
  }
  return a;
}

int sweep_auto(const SweepSettings& s, const AutoSettings& a, const fs::path& shim) {
  const Planner planner{s.axes, a.target, {}};
  std::vector<Measured> runs;
  std::string measure = a.measure;
  double resumed_seconds = 0;
  if (s.resume && fs::exists(s.out)) {
    (void)read_done(s.out, s.axes);  // checks the columns, cuts a half-written row
    if (measure.empty())
      for (const WrittenRun& w : read_runs(s.out, s.axes, protocol::kDevicePeakTarget))
        if (w.exit_status == 0) {
          measure = measure_for(w.figure);
          break;
        }
    for (const WrittenRun& w :
         read_runs(s.out, s.axes, measure.empty() ? protocol::kHostPeakTarget : measure)) {
      runs.push_back({w.values, w.exit_status == 0 ? w.figure : std::nullopt, w.elapsed_s});
      resumed_seconds += w.elapsed_s;
    }
  }
  std::FILE* csv = open_rows(s.out, s.axes, s.resume);
  const fs::path run_dir = make_run_folder();
  const InterruptCatcher catcher;

  const std::string target_text = point_text(s.axes, a.target);
  std::fprintf(stderr, "memwatch sweep --auto: toward %s, tolerance %.3g%%, budget ",
               target_text.c_str(), a.tolerance * 100);
  if (a.budget_runs != static_cast<std::size_t>(-1))
    std::fprintf(stderr, "%zu runs%s", a.budget_runs, a.budget_minutes ? " and " : "");
  if (a.budget_minutes) std::fprintf(stderr, "%g minutes", *a.budget_minutes);
  if (!runs.empty()) std::fprintf(stderr, " (%zu runs already in %s)", runs.size(), s.out.c_str());
  std::fprintf(stderr, ", shim %s\n", shim.c_str());

  const auto start = Clock::now();
  auto spent_s = [&] {
    return resumed_seconds + std::chrono::duration<double>(Clock::now() - start).count();
  };
  model::FitOptions options;
  options.priors.axes = a.stated_axes;
  auto refit_runs = [&](const std::vector<Measured>& measured) -> std::optional<Fitted> {
    if (measure.empty()) return std::nullopt;  // no run has ended well yet
    return refit(planner, measured, measure, a.tolerance, options);
  };
  std::optional<Fitted> fitted = refit_runs(runs), previous;
  if (fitted && !runs.empty()) {
    // A resumed sweep judges its last row as it would have right after running it.
    const std::vector<Measured> before(runs.begin(), runs.end() - 1);
    previous = refit_runs(before);
  }
  std::string stopped;
  int status = 0;
  for (std::size_t i = 0;; ++i) {
    if (fitted && settled(*fitted, previous, a.tolerance)) {
      char why[96];
      std::snprintf(why, sizeof why, "the bound is within %.3g%% of the prediction",
                    a.tolerance * 100);
      stopped = why;
      break;
    }
    if (runs.size() >= a.budget_runs) {
      stopped = "the budget of " + std::to_string(a.budget_runs) + " runs is spent";
      break;
    }
    std::optional<Choice> next;
    if (fitted) {
      const double cap = run_cap(*fitted, runs, a.tolerance);
      next = planner.informed(fitted->model, runs, fitted->fitted, cap);
      if (!next) {
        stopped = cap > fitted->at_target.value * kCapShare
                      ? "no grid point left under the largest run made (1/8 of the target's "
                        "predicted memory is less)"
                      : "no grid point left under 1/8 of the target's predicted memory";
        break;
      }
    } else {
      next = planner.first_runs(runs);
      if (!next) {
        stopped = "no grid point left to run";
        break;
      }
    }
    if (a.budget_minutes) {
      const double next_s = next->expected ? expected_seconds(runs, *next->expected) : 0;
      if (spent_s() + next_s > *a.budget_minutes * 60) {
        char why[96];
        std::snprintf(why, sizeof why, "the budget of %g minutes is spent", *a.budget_minutes);
        stopped = why;
        break;
      }
    }

    const std::vector<double> values = planner.values_of(next->point);
    const std::string point = describe(s.axes, next->point, ' ');
    std::fprintf(stderr, "[auto %zu] %s ... (%s)\n", runs.size() + 1, point.c_str(),
                 next->why.c_str());
    const RunResult r = run_one(run_spec(s, next->point, i, run_dir, shim));
    if (r.interrupted || g_sweep_interrupt.load()) {
      // The interrupted run's row is not written: --resume picks again from the rows written.
      stopped = "interrupted (--resume continues)";
      status = 128 + g_sweep_interrupt.load();
      break;
    }
    std::fputs(csv_row(s.axes, next->point, r).c_str(), csv);
    std::fflush(csv);
    if (measure.empty() && r.exit_status == 0)
      measure = measure_for(figure_of(r, protocol::kDevicePeakTarget));
    const std::string shown = measure.empty() ? protocol::kHostPeakTarget : measure;
    const std::optional<double> peak = figure_of(r, shown);
    runs.push_back({values, r.exit_status == 0 ? peak : std::nullopt, r.elapsed_s});
    previous = std::exchange(fitted, refit_runs(runs));
    std::fprintf(stderr, "[auto %zu] %s: %s %d, %s %s, %.1f s | %s | elapsed %s\n", runs.size(),
                 point.c_str(), r.exit_status < 0 ? "signal" : "exit", std::abs(r.exit_status),
                 shown.c_str(), gib_text(peak).c_str(), r.elapsed_s,
                 model_text(fitted, runs, a.tolerance).c_str(), clock_text(spent_s()).c_str());
    if (!r.log_tail.empty()) std::fputs(r.log_tail.c_str(), stderr);
  }
  std::fclose(csv);
  std::error_code ec;
  fs::remove_all(run_dir, ec);

  double largest = 0;
  for (const auto& r : runs)
    if (r.peak) largest = std::max(largest, *r.peak);
  if (!fitted) {
    std::printf("memwatch sweep --auto: no model of %s from %zu run%s; stopped: %s\n",
                measure.empty() ? "the peak" : measure.c_str(), runs.size(),
                runs.size() == 1 ? "" : "s", stopped.c_str());
    return status ? status : 1;
  }
  std::fprintf(stderr, "%s", fitted->model.describe().c_str());
  if (a.model_out) std::ofstream(*a.model_out) << model::to_json(fitted->model) << "\n";
  if (!grows(*fitted, a.tolerance))
    stopped += "; the runs' peaks hardly differ: the prediction is their floor, not a law";
  if (!fitted->at_target.vouched) stopped += "; " + model::extrapolation_note(fitted->at_target);
  if (previous) {
    // A law that changed its mind at the last run may change it again at the next: said, as the
    // bound of one fit cannot say it.
    const double moved = fitted->at_target.value / previous->at_target.value - 1;
    if (std::abs(moved) > a.tolerance) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "; the last run moved the prediction by %+.1f%%: not settled",
                    moved * 100);
      stopped += buf;
    }
  }
  std::printf(
      "memwatch sweep --auto: at %s predicted %s, upper bound %s (+%.2f%%), from %zu runs (the "
      "largest %s, %.1f%% of the prediction); stopped: %s\n",
      target_text.c_str(), gib_text(fitted->at_target.value).c_str(),
      gib_text(fitted->at_target.upper).c_str(), relative_headroom(*fitted) * 100, runs.size(),
      gib_text(largest).c_str(), largest / fitted->at_target.value * 100, stopped.c_str());
  return status;
}

}  // namespace memwatch::cli
