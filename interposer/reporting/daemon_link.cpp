#include "reporting/daemon_link.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "counting/proc_stats.hpp"
#include "reporting/log.hpp"
#include "reporting/zmq_api.hpp"

namespace memwatch::shim {

namespace {

constexpr int kSendQueue = 1000;       // messages held for a slow daemon before dropping
constexpr int kByeLingerMs = 500;      // how long a clean exit may wait to deliver BYE
constexpr double kHeartbeatS = 1.0;    // a SAMPLE at least this often
constexpr double kPeakStep = 1.01;     // ... and whenever a peak grew by 1%
constexpr int kReconnectMaxMs = 5000;  // a CURVE client's longest wait between tries
constexpr std::size_t kKeyBytes = std::tuple_size_v<protocol::CurveKey>;

void set_int(const ZmqApi& z, void* socket, int option, int value) {
  z.setsockopt(socket, option, &value, sizeof value);
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace

DaemonLink::~DaemonLink() {
  if (socket_ != nullptr) zmq_->close(socket_);
  if (context_ != nullptr) zmq_->ctx_term(context_);
}

bool DaemonLink::daemon_may_listen(const char* endpoint) {
  constexpr std::string_view ipc = "ipc://";
  if (std::strncmp(endpoint, ipc.data(), ipc.size()) != 0) return true;
  struct stat st {};
  return stat(endpoint + ipc.size(), &st) == 0 && S_ISSOCK(st.st_mode);
}

std::optional<protocol::Verdict> DaemonLink::wait_verdict(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  verdict_ready_.wait_for(lock, timeout, [this] { return verdict_.has_value() || gave_up_; });
  return verdict_;
}

// The DEALER, connected; false (with nothing left open) when it cannot be.
bool DaemonLink::open_socket() {
  zmq_ = zmq_api();
  if (zmq_ == nullptr || (context_ = zmq_->ctx_new()) == nullptr) return false;
  socket_ = zmq_->socket(context_, ZMQ_DEALER);
  bool ok = socket_ != nullptr;
  if (ok) {
    set_int(*zmq_, socket_, ZMQ_SNDHWM, kSendQueue);
    set_int(*zmq_, socket_, ZMQ_LINGER, 0);
  }
  if (ok && facts_.curve != nullptr) {
    const protocol::CurveClientKeys& k = *facts_.curve;
    ok = zmq_->setsockopt(socket_, ZMQ_CURVE_SERVERKEY, k.server_public.data(), kKeyBytes) == 0 &&
         zmq_->setsockopt(socket_, ZMQ_CURVE_PUBLICKEY, k.client_public.data(), kKeyBytes) == 0 &&
         zmq_->setsockopt(socket_, ZMQ_CURVE_SECRETKEY, k.client_secret.data(), kKeyBytes) == 0;
    if (!ok) log_line("MEMWATCH_CURVE_KEYS: this libzmq has no CURVE; not reporting to memwatchd");
    // A refused key is tried again at every reconnect: back off, so that a node holding the
    // wrong key does not knock ten times a second for as long as its program runs.
    set_int(*zmq_, socket_, ZMQ_RECONNECT_IVL_MAX, kReconnectMaxMs);
  }
  if (ok && zmq_->connect(socket_, facts_.config->endpoint) == 0) return true;
  if (socket_ != nullptr) zmq_->close(socket_);
  zmq_->ctx_term(context_);
  socket_ = context_ = nullptr;
  return false;
}

void DaemonLink::started() {
  const Config& c = *facts_.config;
  if (!open_socket()) {
    std::lock_guard lock(mutex_);
    gave_up_ = true;
    verdict_ready_.notify_all();
    return;
  }

  protocol::Hello hello;
  hello.pid = static_cast<std::uint32_t>(getpid());
  hello.host = host_name();
  hello.workload = c.workload;
  hello.start_unix_s = facts_.start_unix_s;
  for (int i = 0; i < c.param_count; ++i)
    hello.params.emplace_back(c.params[i].name, c.params[i].value);
  hello.host_capacity_bytes = facts_.host_capacity_bytes;
  int devices = 0;
  for (int i = 0; i < kMaxDevices; ++i)
    if (c.device_capacity[i] > 0) devices = i + 1;
  for (int i = 0; i < devices; ++i) hello.device_capacity_bytes.push_back(c.device_capacity[i]);
  hello.on_oom = c.on_oom;
  hello.scheduler_job = c.scheduler_job;
  send(protocol::encode(hello));

  // The program waits (bounded) for this: poll here rather than at the next sample.
  if (daemon_may_listen(c.endpoint)) {
    zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
    if (zmq_->poll(&item, 1, 2000) > 0) poll_incoming();
  }
  std::lock_guard lock(mutex_);
  gave_up_ = true;
  verdict_ready_.notify_all();
}

void DaemonLink::poll_incoming() {
  char frame[8192];
  for (;;) {
    const int n = zmq_->recv(socket_, frame, sizeof frame, ZMQ_DONTWAIT);
    if (n < 0) return;
    heard_from_daemon_ = true;
    if (static_cast<std::size_t>(n) > sizeof frame) continue;  // truncated: not ours
    auto message = protocol::decode(std::string_view(frame, static_cast<std::size_t>(n)));
    if (!message) continue;
    if (auto* v = std::get_if<protocol::Verdict>(&*message)) {
      std::lock_guard lock(mutex_);
      verdict_ = *v;
      verdict_ready_.notify_all();
    }
  }
}

protocol::Sample DaemonLink::make_sample(const CounterSnapshot& s) const {
  protocol::Sample m;
  m.pid = static_cast<std::uint32_t>(getpid());
  m.t_s = proc_monotonic_s() - facts_.start_monotonic_s;
  protocol::copy_sample_figures(s, m);
  return m;
}

void DaemonLink::sampled(const CounterSnapshot& s) {
  if (socket_ == nullptr) return;
  poll_incoming();
  const std::int64_t peak = s.host_peak + s.device_sum_peak;
  const double now = proc_monotonic_s();
  if (static_cast<double>(peak) < kPeakStep * static_cast<double>(last_sent_peak_) &&
      now - last_sent_at_ < kHeartbeatS)
    return;
  send(protocol::encode(make_sample(s)));
  last_sent_peak_ = peak;
  last_sent_at_ = now;
}

void DaemonLink::stopping(const CounterSnapshot& s) {
  if (socket_ == nullptr) return;
  poll_incoming();
  protocol::Bye bye;
  bye.pid = static_cast<std::uint32_t>(getpid());
  bye.elapsed_s = proc_monotonic_s() - facts_.start_monotonic_s;
  CounterSnapshot last = s;
  last.rss_hwm = proc_rss_hwm_bytes();  // the figures of source `process`
  protocol::copy_run_figures(last, bye);
  bye.device_peaks = protocol::device_peaks_of(last);
  bye.cause = exit_cause_.load(std::memory_order_acquire);
  bye.detail = exit_detail_.load(std::memory_order_relaxed);
  send(protocol::encode(bye));
  // Only a daemon that answered is worth waiting for; otherwise queued frames are dropped.
  set_int(*zmq_, socket_, ZMQ_LINGER, heard_from_daemon_ ? kByeLingerMs : 0);
  zmq_->close(socket_);
  socket_ = nullptr;
  zmq_->ctx_term(context_);
  context_ = nullptr;
}

void DaemonLink::send(const std::string& frame) {
  zmq_->send(socket_, frame.data(), frame.size(), ZMQ_DONTWAIT);
}

}  // namespace memwatch::shim
