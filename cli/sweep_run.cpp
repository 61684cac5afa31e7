#include "sweep_run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace memwatch::cli {

std::atomic<int> g_sweep_interrupt{0};

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using protocol::FigureId;

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

// A run figure as the report has it: its job's (report.job[name]) where the report is a job's,
// else the process's own.
std::optional<std::int64_t> run_figure(const nlohmann::json& report,
                                       const protocol::Figure& figure) {
  if (auto job = report.find("job"); job != report.end() && job->is_object())
    if (auto value = job->find(std::string(figure.name));
        value != job->end() && value->is_number_integer())
      return value->get<std::int64_t>();
  return report_figure(report, figure);
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
  unsetenv("MEMWATCH_JOB");  // each row is a job of its own, even in a sweep run inside one
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

extern "C" void on_interrupt(int sig) {
  g_sweep_interrupt.store(sig);
}

}  // namespace

InterruptCatcher::InterruptCatcher() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

InterruptCatcher::~InterruptCatcher() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

std::optional<double> figure_of(const RunResult& r, std::string_view column) {
  for (const protocol::Figure& f : protocol::kFigures)
    if (f.name == column && r.figures[protocol::figure_index(f)])
      return static_cast<double>(*r.figures[protocol::figure_index(f)]);
  return std::nullopt;
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
    if (got < 0 && errno != EINTR)
      throw std::runtime_error(std::string("wait: ") + std::strerror(errno));
    if (int sig = g_sweep_interrupt.load(); sig && !forwarded) {
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
        if (auto value = run_figure(report, f); f.run && value)
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

}  // namespace memwatch::cli
