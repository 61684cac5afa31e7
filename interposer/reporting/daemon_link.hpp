// The shim's connection to memwatchd, driven by the reporter thread: a ZeroMQ DEALER that
// sends HELLO at start, SAMPLE at each new high-water step (and a heartbeat), BYE at a clean
// end, and receives the VERDICT. It never blocks the program: sends do not wait, a full queue
// drops samples, and when no daemon ever answered nothing lingers at exit.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "memwatch/protocol/curve_keys.hpp"
#include "memwatch/protocol/wire.hpp"
#include "reporting/reporter.hpp"
#include "settings/config.hpp"

namespace memwatch::shim {

struct ZmqApi;

struct LinkFacts {
  const Config* config;
  std::int64_t host_capacity_bytes;
  double start_unix_s;
  double start_monotonic_s;
  const protocol::CurveClientKeys* curve;  // the DEALER is a CURVE client of these; null: plain
};

class DaemonLink final : public ReporterClient {
 public:
  explicit DaemonLink(const LinkFacts& facts) : facts_(facts) {}
  ~DaemonLink() override;

  // True when a daemon may be listening: for ipc, its socket file exists. Without one the
  // program does not wait for a verdict.
  [[nodiscard]] static bool daemon_may_listen(const char* endpoint);

  // Waits at most `timeout` for the daemon's verdict on this run (called by the program's
  // thread at start-up, while the reporter thread talks to the daemon).
  std::optional<protocol::Verdict> wait_verdict(std::chrono::milliseconds timeout);

  void started() override;
  void sampled(const CounterSnapshot& s) override;
  void stopping(const CounterSnapshot& s) override;
  // How the program is ending, for BYE, when not by returning from main or exit(): set before
  // the reporter is asked to stop (_exit's status, say).
  void set_exit(protocol::ExitCause cause, int detail) noexcept {
    exit_detail_.store(detail, std::memory_order_relaxed);
    exit_cause_.store(cause, std::memory_order_release);
  }

 private:
  bool open_socket();
  void send(const std::string& frame);
  void poll_incoming();
  protocol::Sample make_sample(const CounterSnapshot& s) const;

  LinkFacts facts_;
  const ZmqApi* zmq_ = nullptr;
  void* context_ = nullptr;
  void* socket_ = nullptr;
  bool heard_from_daemon_ = false;
  std::atomic<protocol::ExitCause> exit_cause_{protocol::ExitCause::exit};
  std::atomic<int> exit_detail_{0};
  std::int64_t last_sent_peak_ = 0;
  double last_sent_at_ = 0;

  std::mutex mutex_;
  std::condition_variable verdict_ready_;
  std::optional<protocol::Verdict> verdict_;
  bool gave_up_ = false;
};

}  // namespace memwatch::shim
