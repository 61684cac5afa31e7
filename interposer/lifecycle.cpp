// The shim's life inside the program: start-up (configuration, segment, reporter thread),
// fork, fatal signals, _exit, and the report at the end. Nothing here runs on the hooks' path.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "counting/job.hpp"
#include "counting/proc_stats.hpp"
#include "counting/segment.hpp"
#include "device/device_count.hpp"
#include "hooks/hooks.hpp"
#include "memwatch/protocol/endpoints.hpp"
#include "memwatch/protocol/private_dir.hpp"
#include "reporting/daemon_link.hpp"
#include "reporting/log.hpp"
#include "reporting/report.hpp"
#include "reporting/reporter.hpp"
#include "settings/config.hpp"
#include "settings/program_name.hpp"
#if MEMWATCH_DEVICE_HOOKS
#include "device/device_cupti.hpp"
#include "device/device_hooks.hpp"
#include "device/device_nvml.hpp"
#endif

using namespace memwatch::shim;

namespace {

Config g_config;
int g_pid = 0;  // whose counters these are: a vfork child shares our memory but not our pid
double g_start_monotonic = 0;
std::int64_t g_host_capacity = 0;
std::atomic<bool> g_report_done{false};
bool g_started = false;
alignas(Reporter) unsigned char g_reporter_storage[sizeof(Reporter)];
Reporter* g_reporter = nullptr;
alignas(DaemonLink) unsigned char g_link_storage[sizeof(DaemonLink)];
DaemonLink* g_link = nullptr;  // null when no daemon listened at start

// How long the program waits, before main, for the daemon's verdict on its run; only when the
// daemon's socket exists.
constexpr std::chrono::milliseconds kVerdictWait{1000};
// How long _exit may wait for the reporter's BYE (it looks within its 100 ms period, and sends
// within the link's linger).
constexpr std::chrono::milliseconds kExitByeWait{1000};
// The exit status when MEMWATCH_ON_OOM=abort stops a run predicted not to fit (EX_TEMPFAIL:
// "try again", with a smaller configuration).
constexpr int kOomAbortStatus = 75;

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
                                 SIGTERM, SIGINT, SIGHUP, SIGQUIT};

std::int64_t device_capacity(int device) noexcept {
  if (g_config.device_capacity[device] > 0) return g_config.device_capacity[device];
#if MEMWATCH_DEVICE_HOOKS
  return device_nvml_capacity(device);
#else
  return 0;
#endif
}

// On the reporter thread, each sample: once the program has brought CUDA, CUPTI is tried and
// the devices' capacities read (both load libraries: never from a hook).
void device_tick() {
#if MEMWATCH_DEVICE_HOOKS
  static bool started = false;
  if (started || !device_cuda_seen()) return;
  started = true;
  device_cupti_start(g_config.cupti);
  device_nvml_read();
#endif
}

// What the reporter thread drives: the device side's tick, and the daemon link when a daemon
// listens.
class ReporterClients final : public ReporterClient {
 public:
  void started() override {
    if (g_link != nullptr) g_link->started();
  }
  void sampled(const CounterSnapshot& s) override {
    device_tick();
    job_sample();
    if (g_link != nullptr) g_link->sampled(s);
  }
  void stopping(const CounterSnapshot& s) override {
    if (g_link != nullptr) g_link->stopping(s);
  }
};
ReporterClients g_clients;

// A member of a job writes its own report only where MEMWATCH_REPORT names each process's file;
// the report at the one path is the job's, its root's.
bool writes_report() {
  const char* path = g_config.report_path;
  return path[0] != '\0' && (job_role() != JobRole::member || std::strstr(path, "%p") != nullptr);
}

// Once per process; async-signal-safe (report formatting and writing allocate nothing).
void finish(ExitCause cause, int detail) noexcept {
  if (getpid() != g_pid) return;  // a vfork child: the report is its parent's to write
  if (g_report_done.exchange(true)) return;
  counters_flush_thread();
  CounterBlock& block = counters_block();
  const CounterSnapshot own = counters_snapshot(block);
  job_sample();  // the root's report counts only members still there
  if (writes_report()) {
    ReportFacts facts{};
    facts.config = &g_config;
    facts.counters = own;
    facts.job = job_role() == JobRole::root ? job_block() : nullptr;
    facts.error_bound_bytes = counters_error_bound();
    facts.rss_hwm_bytes = proc_rss_hwm_bytes();
    facts.host_capacity_bytes = g_host_capacity;
    facts.elapsed_s = proc_monotonic_s() - g_start_monotonic;
    facts.pid = g_pid;
    facts.cause = cause;
    facts.detail = detail;
    facts.device_sources = device_sources();
    for (int i = 0; i < kMaxDevices; ++i) facts.device_capacity_bytes[i] = device_capacity(i);
    static char buffer[64 * 1024];
    const std::string_view json = report_format(facts, buffer, sizeof buffer);
    const char* why = json.empty() ? "it does not fit its buffer"
                                   : report_write(g_config.report_path, g_pid, json);
    if (why != nullptr) log_line("cannot write the report to %s: %s", g_config.report_path, why);
  }
  job_leave(own, MemberState::exited);
  if (cause != ExitCause::signal) {
    // Clean ends mark the block and remove the segments; after a fatal signal they stay for the
    // daemon, as they would after SIGKILL.
    block.exited.store(1, std::memory_order_relaxed);
    segment_remove(g_pid);
    job_close();
  }
}

void on_fatal_signal(int sig, siginfo_t* info, void*) {
  finish(ExitCause::signal, sig);
  // SA_RESETHAND restored the default action. A fault the kernel raised (si_code > 0) re-executes
  // its instruction and dies as it would have; a signal sent by a process (kill, raise, abort:
  // si_code <= 0), SIGSEGV included, would not come again, so it is raised again (SA_NODEFER
  // lets it through at once).
  const bool fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) &&
                     info != nullptr && info->si_code > 0;
  if (!fault) raise(sig);
}

void install_signal_handlers() {
  for (int sig : kFatalSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction act {};
    act.sa_sigaction = on_fatal_signal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
    sigaction(sig, &act, nullptr);
  }
}

// On the reporter thread: formats on the stack, allocates nothing.
void warn_capacity(const CapacityWarning& w) {
  char memory[32] = "host";
  if (w.device >= 0) std::snprintf(memory, sizeof memory, "device %d", w.device);
  const memwatch::protocol::WatchFinding& f = w.finding;
  const double percent = w.share * 100;
  if (f.kind == memwatch::protocol::WatchKind::on_course) {
    log_line(
        "warning: live %s memory %.2f GiB is growing %.3f GiB/s, on course to pass %g%% of "
        "the capacity %.2f GiB in %.1f s",
        memory, f.live_bytes / 0x1p30, f.rate_bytes_per_s / 0x1p30, percent,
        f.capacity_bytes / 0x1p30, f.eta_s);
  } else {
    log_line("warning: live %s memory %.2f GiB is past %g%% of the capacity, %.2f GiB", memory,
             f.live_bytes / 0x1p30, percent, f.capacity_bytes / 0x1p30);
  }
}

// MEMWATCH_CURVE_KEYS, read when a daemon link is first wanted. Forked children inherit the
// keys, or the decision to stay away from the daemon, without reading or saying it again.
enum class CurveState { unread, plain, keys, unusable };
CurveState g_curve_state = CurveState::unread;
memwatch::protocol::CurveClientKeys g_curve_keys;

// The keys the link uses (null: plain); false when the link must not be made at all.
bool curve_keys_for_link(const memwatch::protocol::CurveClientKeys*& keys) {
  if (g_curve_state == CurveState::unread) {
    std::string error;
    if (g_config.curve_keys[0] == '\0') {
      g_curve_state = CurveState::plain;
    } else if (memwatch::protocol::read_client_keys(g_config.curve_keys, g_curve_keys, error)) {
      g_curve_state = CurveState::keys;
    } else {
      g_curve_state = CurveState::unusable;
      log_line("MEMWATCH_CURVE_KEYS: %s; not reporting to memwatchd", error.c_str());
    }
  }
  keys = g_curve_state == CurveState::keys ? &g_curve_keys : nullptr;
  return g_curve_state != CurveState::unusable;
}

// The default folder of the daemon's sockets is trusted only when it is this user's and
// private (docs/security.md): whoever owns a squatted one could put their own socket there and
// answer every verdict. Decided once, at start; forked children inherit it silently.
enum class FolderState { unread, trusted, refused };
FolderState g_folder_state = FolderState::unread;

bool endpoint_folder_trusted() {
  if (g_folder_state == FolderState::unread) {
    g_folder_state = FolderState::trusted;
    const std::string folder = memwatch::protocol::ipc_folder(g_config.endpoint);
    struct stat st {};
    // No folder, no daemon: nothing is trusted by connecting nowhere.
    if (folder == memwatch::protocol::default_runtime_dir() && lstat(folder.c_str(), &st) == 0) {
      const std::string problem = memwatch::protocol::private_dir_problem(folder, st);
      if (!problem.empty()) {
        g_folder_state = FolderState::refused;
        log_line("%s; not reporting to memwatchd", problem.c_str());
      }
    }
  }
  return g_folder_state == FolderState::trusted;
}

// The root watches, and tells the daemon of, the job's figures; a member only keeps its slot's
// figures up to date.
void start_reporter() {
  ReporterOptions options;
  const bool member = job_role() == JobRole::member;
  if (job_role() == JobRole::root) options.block = &job_block()->counters;
  if (!member) {
    options.host_capacity_bytes = g_host_capacity;
    options.device_capacity = device_capacity;
  }
  options.watch = g_config.watch;
  g_link = nullptr;
  const memwatch::protocol::CurveClientKeys* keys = nullptr;
  if (!member && endpoint_folder_trusted() && DaemonLink::daemon_may_listen(g_config.endpoint) &&
      curve_keys_for_link(keys)) {
    g_link = new (g_link_storage)
        DaemonLink({&g_config, g_host_capacity, proc_unix_s(), g_start_monotonic, keys});
  }
  g_reporter->start(options, &g_clients, warn_capacity);
}

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / 0x1p30);
  return text;
}

// The daemon predicted this run's peak before it allocates: say so when it will not fit.
void act_on_verdict(const memwatch::protocol::Verdict& v) {
  if (v.kind != memwatch::protocol::VerdictKind::over_capacity || g_config.on_oom == OnOom::off)
    return;
  std::string fits = "no value of " + v.vary + " fits";
  if (v.largest_fitting > 0) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", v.largest_fitting);
    fits = "the largest " + v.vary + " that fits is " + value;
  }
  // A device verdict names the device; the host's line stays as users know it.
  const char* memory = v.target == memwatch::protocol::kDevicePeakTarget ? "device " : "";
  log_line("warning: predicted %speak %s (upper bound %s) exceeds the %scapacity %s; %s", memory,
           gib(v.predicted_bytes).c_str(), gib(v.upper_bytes).c_str(), memory,
           gib(v.capacity_bytes).c_str(), fits.c_str());
  if (g_config.on_oom == OnOom::abort) {
    log_line("stopping the program before it allocates (MEMWATCH_ON_OOM=abort), exit status %d",
             kOomAbortStatus);
    g_real.exit_now(kOomAbortStatus);
  }
}

// A new segment for this pid, carrying the current values; says so once if it cannot, and then
// counts in the process's own memory (a forked child must not go on in its parent's segment).
void attach_segment(bool keep_peaks) {
  CounterBlock* block = segment_create(g_pid);
  if (block == nullptr) {
    log_line(
        "cannot create the shared-memory segment /dev/shm/%s; counting goes on, but the "
        "last values will not survive a SIGKILL",
        segment_name(g_pid).c_str());
    block = &counters_static_block();
  }
  counters_init_block(*block, g_pid, proc_unix_s(), keep_peaks);
  counters_use_block(block);
}

void before_fork() {
  counters_flush_thread();
}

void in_forked_child() {
  InternalScope internal;
  g_pid = getpid();
  g_start_monotonic = proc_monotonic_s();
  g_report_done.store(false);
  attach_segment(/*keep_peaks=*/false);  // until then the counters are the parent's
  counters_after_fork_child();
  job_after_fork_child();
  g_reporter->forget_after_fork();
  start_reporter();
}

void warn_config(const std::string& message) {
  log_line("%s", message.c_str());
}

const char* environment(const char* name) {
  return std::getenv(name);
}

// A program that ends by _exit (dash does, and Python's os._exit) runs no destructor: its BYE is
// asked of the reporter thread here, or the daemon would find the process gone without one and
// store the run as killed. Only where the link is this process's own (not in a vfork child,
// which shares its parent's memory), and never for longer than kExitByeWait.
void say_bye_before_exit(int status) noexcept {
  if (g_link == nullptr || getpid() != g_pid) return;
  g_link->set_exit(ExitCause::underscore_exit, status);
  g_reporter->stop_before_exit(kExitByeWait);
}

}  // namespace

// Runs after libc and libstdc++ are initialised (they are our dependencies), before the
// program's own constructors; glibc passes argc/argv/envp to ELF constructors.
__attribute__((constructor(101))) static void memwatch_start(int argc, char** argv, char**) {
  InternalScope internal;
  real_functions_resolve();
  shim_arena_create();
#if MEMWATCH_DEVICE_HOOKS
  // Learns the shim's own address range now, not from the first dlsym a CUDA library makes.
  device_in_shim(nullptr);
#endif
  g_pid = getpid();
  g_start_monotonic = proc_monotonic_s();
  config_load(g_config, environment, argc, argv, warn_config);
  counters_set_batch(g_config.batch_bytes);
  g_host_capacity =
      g_config.host_capacity > 0 ? g_config.host_capacity : proc_host_capacity_bytes();
  attach_segment(/*keep_peaks=*/true);
  job_start(g_config.job_root, program_name(argc, argv).c_str());
  if (job_role() == JobRole::none)
    log_line(
        "cannot create the shared-memory segment /dev/shm/%s; the run's figures are this "
        "process's alone, not its job's",
        memwatch::protocol::job_segment_name(g_pid).c_str());
  pthread_atfork(before_fork, nullptr, in_forked_child);
  if (g_config.signals) install_signal_handlers();
  g_reporter = new (g_reporter_storage) Reporter();
  start_reporter();
  g_started = true;
  if (g_link != nullptr)
    if (auto verdict = g_link->wait_verdict(kVerdictWait)) act_on_verdict(*verdict);
}

__attribute__((destructor(101))) static void memwatch_stop() {
  if (!g_started) return;
  InternalScope internal;
  g_reporter->stop();
  finish(ExitCause::exit, 0);
}

MEMWATCH_HOOK [[noreturn]] void _exit(int status) {
  if (!g_ready.load(std::memory_order_acquire)) real_functions_resolve();
  if (g_started) {
    say_bye_before_exit(status);
    finish(ExitCause::underscore_exit, status);
  }
  g_real.exit_now(status);
  __builtin_unreachable();
}

MEMWATCH_HOOK [[noreturn]] void _Exit(int status) {
  _exit(status);
}
