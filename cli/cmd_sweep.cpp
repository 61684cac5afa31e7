// `memwatch sweep`: runs a command over every combination of a parameter grid under the shim and
// writes one CSV row per run, the dataset the modeler fits.
//
//   memwatch sweep --grid batch=1,2,4 --grid dim=32,48,64 --out runs.csv -- CMD {batch} {dim}
//
// Each run gets LD_PRELOAD (the shim), MEMWATCH_PARAMS and its own MEMWATCH_REPORT; the row holds
// what the report says. A run that fails or is killed still gets its row, with its status; a
// sweep that is interrupted leaves only whole rows behind, so `--resume` can finish it.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "memwatch/protocol/figures.hpp"
#include "shim_path.hpp"

namespace memwatch::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using protocol::FigureId;

struct Axis {
  std::string name;
  std::vector<std::string> values;  // as the user wrote them: they go into the CSV unchanged
};

// One parameter point: a value index per axis.
using Point = std::vector<std::size_t>;

struct RunResult {
  // The run figures (figures.hpp) as its report has them, by figure; empty without a report.
  std::array<std::optional<std::int64_t>, protocol::kFigureCount> figures;
  double elapsed_s = 0;
  int exit_status = 0;  // the exit code, or minus the signal that ended the run
  bool interrupted = false;
  std::string log_tail;
};

// Set from the signal handler; the main loop passes the signal on to the running command.
std::atomic<int> g_interrupt{0};

extern "C" void on_interrupt(int sig) { g_interrupt.store(sig); }

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  while (true) {
    auto at = text.find(sep);
    parts.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

Axis parse_axis(std::string_view spec) {
  auto eq = spec.find('=');
  if (eq == std::string_view::npos)
    throw UsageError("--grid expects NAME=V1,V2,..., got '" + std::string(spec) + "'");
  Axis axis{std::string(spec.substr(0, eq)), split(spec.substr(eq + 1), ',')};
  if (!is_identifier(axis.name))
    throw UsageError("--grid: '" + axis.name + "' is not a parameter name (letters, digits, _)");
  for (const auto& v : axis.values) parse_number(v, "--grid " + axis.name);
  return axis;
}

// The same number written two ways (4 and 4.0) is the same point when resuming.
std::string canonical_number(std::string_view text) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", parse_number(text, "value"));
  return buf;
}

std::string substitute(std::string word, const std::vector<Axis>& axes, const Point& point) {
  for (std::size_t a = 0; a < axes.size(); ++a) {
    const std::string key = "{" + axes[a].name + "}";
    const std::string& value = axes[a].values[point[a]];
    for (auto at = word.find(key); at != std::string::npos; at = word.find(key, at + value.size()))
      word.replace(at, key.size(), value);
  }
  return word;
}

// A `{name}` left after substitution names no axis: a typo that would run the wrong command
// every time, so it is refused before anything runs.
void check_placeholders(const std::vector<std::string>& command, const std::vector<Axis>& axes) {
  const Point first(axes.size(), 0);
  for (const auto& word : command) {
    const std::string done = substitute(word, axes, first);
    for (auto open = done.find('{'); open != std::string::npos; open = done.find('{', open + 1)) {
      auto close = done.find('}', open);
      if (close == std::string::npos) break;
      auto name = std::string_view(done).substr(open + 1, close - open - 1);
      if (is_identifier(name))
        throw UsageError("the command uses {" + std::string(name) + "}, which no --grid defines");
    }
  }
}

std::string point_key(const std::vector<Axis>& axes, const Point& point) {
  std::string key;
  for (std::size_t a = 0; a < axes.size(); ++a)
    key += canonical_number(axes[a].values[point[a]]) + ",";
  return key;
}

std::string describe(const std::vector<Axis>& axes, const Point& point, char sep) {
  std::string s;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (a) s += sep;
    s += axes[a].name + "=" + axes[a].values[point[a]];
  }
  return s;
}

std::string csv_header(const std::vector<Axis>& axes) {
  std::string h;
  for (const auto& axis : axes) h += axis.name + ",";
  for (const std::string& c : protocol::sweep_measure_columns()) h += c + ",";
  h.pop_back();
  return h;
}

// Reads an earlier sweep's file: how many rows each point already has. A last line without its
// newline is a row cut short by a crash; it is cut off so the run is done again.
std::map<std::string, std::size_t> read_done(const fs::path& out, const std::vector<Axis>& axes) {
  std::ifstream in(out, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!text.empty() && text.back() != '\n') {
    text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    fs::resize_file(out, text.size());
  }
  std::map<std::string, std::size_t> done;
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line)) return done;
  if (line != csv_header(axes))
    throw std::runtime_error(out.string() + " has the columns '" + line + "', this sweep writes '" +
                             csv_header(axes) + "': resume needs the same parameter names");
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    auto cells = split(line, ',');
    if (cells.size() < axes.size())
      throw std::runtime_error(out.string() + ": a row with too few cells: " + line);
    std::string key;
    for (std::size_t a = 0; a < axes.size(); ++a) key += canonical_number(cells[a]) + ",";
    ++done[key];
  }
  return done;
}

// A figure where the report puts it: report[key], or report[group][key].
std::optional<std::int64_t> report_figure(const nlohmann::json& report,
                                          const protocol::Figure& figure) {
  const nlohmann::json* at = &report;
  for (std::string_view key : {figure.report_group, figure.report_key}) {
    if (key.empty()) continue;
    const std::string k(key);
    if (!at->is_object() || !at->contains(k)) return std::nullopt;
    at = &(*at)[k];
  }
  if (!at->is_number()) return std::nullopt;
  return at->get<std::int64_t>();
}

std::string tail_of(const fs::path& log, std::size_t lines) {
  std::ifstream in(log);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string tail;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    tail += "    " + all[i] + "\n";
  return tail;
}

struct RunSpec {
  std::vector<std::string> argv;
  std::string params;  // MEMWATCH_PARAMS
  fs::path report, log, shim;
  std::optional<std::string> workload;
  std::optional<double> timeout_s;
};

// The child: its own process group, so a timeout or an interrupt reaches everything it started.
// If the command cannot be started at all, errno goes back through `report_fd` (closed on a
// successful exec).
[[noreturn]] void exec_child(const RunSpec& spec, int report_fd) {
  setpgid(0, 0);
  std::string preload = spec.shim.string();
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("MEMWATCH_PARAMS", spec.params.c_str(), 1);
  setenv("MEMWATCH_REPORT", spec.report.c_str(), 1);
  if (spec.workload) setenv("MEMWATCH_WORKLOAD", spec.workload->c_str(), 1);
  int devnull = open("/dev/null", O_RDONLY);
  int log = open(spec.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (devnull >= 0) dup2(devnull, 0);
  if (log >= 0) dup2(log, 1), dup2(log, 2);
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  const int err = errno;
  (void)!write(report_fd, &err, sizeof err);
  _exit(127);
}

RunResult run_one(const RunSpec& spec) {
  RunResult result;
  std::error_code ec;
  fs::remove(spec.report, ec);
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const auto start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(spec, exec_pipe[1]);
  setpgid(pid, pid);  // also here, so the group exists whichever of the two runs first
  close(exec_pipe[1]);
  // A command that cannot start (missing, not executable) is no run to record: every point
  // would fail the same way in milliseconds, so the sweep stops and --resume can go on later.
  int exec_errno = 0;
  ssize_t got_errno;
  do got_errno = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  while (got_errno < 0 && errno == EINTR);
  close(exec_pipe[0]);
  if (got_errno == static_cast<ssize_t>(sizeof exec_errno)) {
    waitpid(pid, nullptr, 0);
    throw std::runtime_error("cannot run " + spec.argv[0] + ": " + std::strerror(exec_errno));
  }

  int status = 0;
  rusage usage{};
  bool killed_for_time = false;
  int forwarded = 0;
  while (true) {
    pid_t got = wait4(pid, &status, WNOHANG, &usage);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) throw std::runtime_error(std::string("wait: ") + std::strerror(errno));
    if (int sig = g_interrupt.load(); sig && !forwarded) {
      kill(-pid, sig);
      forwarded = sig;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (spec.timeout_s && elapsed > *spec.timeout_s && !killed_for_time) {
      kill(-pid, SIGKILL);
      killed_for_time = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  result.interrupted = forwarded != 0;
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  // ru_maxrss is in KiB; it stands in for the report's figure when there is no report.
  std::optional<std::int64_t>& rss_hwm =
      result.figures[static_cast<std::size_t>(FigureId::rss_hwm)];
  rss_hwm = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;

  std::ifstream in(spec.report);
  if (in) {
    auto report = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (report.is_object() && report.value("schema", "") == "memwatch.report/1") {
      for (const protocol::Figure& f : protocol::kFigures)
        if (auto value = report_figure(report, f); f.run && value)
          result.figures[protocol::figure_index(f)] = value;
      if (report.contains("elapsed_s") && report["elapsed_s"].is_number())
        result.elapsed_s = report["elapsed_s"].get<double>();
    } else {
      std::fprintf(stderr, "memwatch sweep: %s is not a memwatch.report/1 report\n",
                   spec.report.c_str());
    }
  }
  if (result.exit_status != 0) result.log_tail = tail_of(spec.log, 5);
  return result;
}

std::string csv_row(const std::vector<Axis>& axes, const Point& point, const RunResult& r) {
  std::string row;
  for (std::size_t a = 0; a < axes.size(); ++a) row += axes[a].values[point[a]] + ",";
  for (const protocol::Figure& f : protocol::kFigures) {
    if (!f.run) continue;
    const std::optional<std::int64_t>& v = r.figures[protocol::figure_index(f)];
    row += v ? std::to_string(*v) : std::string();
    row += ",";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f,%d\n", r.elapsed_s, r.exit_status);
  return row + buf;
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

void usage_check(const Args& args) {
  if (!args.positional().empty())
    throw UsageError("unexpected argument '" + args.positional().front() +
                     "' (the command to run goes after --)");
  if (args.rest().empty())
    throw UsageError("no command to run: memwatch sweep --grid NAME=V1,V2 --out FILE -- CMD {NAME}");
}

}  // namespace

int cmd_sweep(std::span<char* const> argv) {
  Args args(argv, {"grid", "out", "repeat", "shim", "timeout", "workload"}, {"resume", "help"});
  if (args.flag("help")) {
    std::string columns;
    for (const std::string& c : protocol::sweep_measure_columns()) columns += ", " + c;
    std::printf(
        "usage: memwatch sweep --grid NAME=V1,V2,... [--grid ...] --out FILE [--repeat N]\n"
        "                      [--resume] [--timeout SECONDS] [--shim PATH] [--workload NAME]\n"
        "                      -- COMMAND [ARGS with {NAME}]\n"
        "Runs COMMAND for every combination of the grids under the shim and appends one CSV row\n"
        "per run: the parameters%s\n(exit_status: minus the signal for a killed run).\n",
        columns.c_str());
    return 0;
  }
  usage_check(args);
  std::vector<Axis> axes;
  for (const auto& spec : args.values("grid")) {
    axes.push_back(parse_axis(spec));
    for (std::size_t a = 0; a + 1 < axes.size(); ++a)
      if (axes[a].name == axes.back().name)
        throw UsageError("--grid " + axes.back().name + " given twice");
  }
  const fs::path out = args.required("out");
  const bool resume = args.flag("resume");
  std::size_t repeat = 1;
  if (auto r = args.value("repeat")) {
    double v = parse_number(*r, "--repeat");
    if (v < 1 || v != std::floor(v) || v > 1e6) throw UsageError("--repeat must be a positive integer");
    repeat = static_cast<std::size_t>(v);
  }
  std::optional<double> timeout_s;
  if (auto t = args.value("timeout")) {
    timeout_s = parse_number(*t, "--timeout");
    if (*timeout_s <= 0) throw UsageError("--timeout must be positive");
  }
  const std::vector<std::string>& command = args.rest();
  check_placeholders(command, axes);

  const fs::path shim = find_shim(args.value("shim").value_or(""));

  std::map<std::string, std::size_t> done;
  const bool exists = fs::exists(out);
  if (exists && !resume)
    throw UsageError(out.string() + " exists: pass --resume to continue it, or remove it");
  if (exists) done = read_done(out, axes);

  // Every point, the first --grid varying slowest; each wants `repeat` rows in all.
  std::vector<Point> pending;
  std::size_t already = 0;
  Point point(axes.size(), 0);
  while (true) {
    auto have = done[point_key(axes, point)];
    already += std::min(have, repeat);
    for (std::size_t r = have; r < repeat; ++r) pending.push_back(point);
    std::size_t a = axes.size();
    while (a > 0 && ++point[a - 1] == axes[a - 1].values.size()) point[--a] = 0;
    if (a == 0) break;
  }

  std::FILE* csv = std::fopen(out.c_str(), "a");
  if (!csv) throw std::runtime_error("cannot open " + out.string() + ": " + std::strerror(errno));
  if (!exists || fs::file_size(out) == 0) {
    std::fprintf(csv, "%s\n", csv_header(axes).c_str());
    std::fflush(csv);
  }

  const char* tmp_env = std::getenv("TMPDIR");
  std::string tmp_template = std::string(tmp_env && *tmp_env ? tmp_env : "/tmp") +
                             "/memwatch-sweep-XXXXXX";
  if (!mkdtemp(tmp_template.data()))
    throw std::runtime_error("mkdtemp " + tmp_template + ": " + std::strerror(errno));
  const fs::path tmp_dir = tmp_template;

  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  std::fprintf(stderr, "memwatch sweep: %zu runs to do", pending.size());
  if (already) std::fprintf(stderr, " (%zu already in %s)", already, out.c_str());
  std::fprintf(stderr, ", shim %s\n", shim.c_str());

  const auto sweep_start = Clock::now();
  std::size_t failed = 0;
  int status = 0;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const Point& p = pending[i];
    RunSpec spec;
    for (const auto& word : command) spec.argv.push_back(substitute(word, axes, p));
    spec.params = describe(axes, p, ',');
    spec.report = tmp_dir / ("run-" + std::to_string(i) + ".json");
    spec.log = tmp_dir / ("run-" + std::to_string(i) + ".log");
    spec.shim = shim;
    spec.workload = args.value("workload");
    spec.timeout_s = timeout_s;

    std::fprintf(stderr, "[%zu/%zu] %s ...\n", i + 1, pending.size(), describe(axes, p, ' ').c_str());
    RunResult r = run_one(spec);
    if (r.interrupted || g_interrupt.load()) {
      // The interrupted run's row is not written: --resume runs it again.
      std::fprintf(stderr, "memwatch sweep: interrupted; %zu of %zu runs written to %s (--resume "
                   "continues)\n", i, pending.size(), out.c_str());
      status = 128 + g_interrupt.load();
      break;
    }
    const std::string row = csv_row(axes, p, r);
    std::fputs(row.c_str(), csv);
    std::fflush(csv);
    if (r.exit_status != 0) ++failed;

    const double elapsed = std::chrono::duration<double>(Clock::now() - sweep_start).count();
    const double left = elapsed / static_cast<double>(i + 1) * static_cast<double>(pending.size() - i - 1);
    std::fprintf(stderr, "[%zu/%zu] %s: %s %d, host peak %s, %.1f s | elapsed %s, about %s left\n",
                 i + 1, pending.size(), describe(axes, p, ' ').c_str(),
                 r.exit_status < 0 ? "signal" : "exit", std::abs(r.exit_status),
                 bytes_text(r.figures[static_cast<std::size_t>(FigureId::host_peak)]).c_str(),
                 r.elapsed_s, clock_text(elapsed).c_str(), clock_text(left).c_str());
    if (!r.log_tail.empty()) std::fputs(r.log_tail.c_str(), stderr);
  }
  std::fclose(csv);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  std::error_code ec;
  fs::remove_all(tmp_dir, ec);
  if (status == 0)
    std::fprintf(stderr, "memwatch sweep: done, %zu runs (%zu failed) in %s, rows in %s\n",
                 pending.size(), failed, clock_text(std::chrono::duration<double>(Clock::now() -
                                                                               sweep_start).count())
                                          .c_str(),
                 out.c_str());
  return status;
}

}  // namespace memwatch::cli
