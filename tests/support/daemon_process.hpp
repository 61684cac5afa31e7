// A memwatchd in the foreground on ipc endpoints of its own (killed with the object), its query
// socket, and a subscriber to its events: what the tests that run real shims against a real
// daemon share.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

namespace memwatch::test {

class DaemonProcess {
 public:
  // `dir` holds the sockets (dir/sock), the daemon's stderr and, unless `db` is given, the store.
  DaemonProcess(std::string memwatchd, std::string dir, std::string db = "",
                std::vector<std::string> extra_args = {});
  ~DaemonProcess() { stop(SIGTERM); }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  void start();
  void stop(int sig);

  [[nodiscard]] std::string ingest() const { return "ipc://" + dir_ + "/sock/ingest"; }
  [[nodiscard]] std::string query() const { return "ipc://" + dir_ + "/sock/query"; }
  [[nodiscard]] std::string events() const { return "ipc://" + dir_ + "/sock/events"; }
  [[nodiscard]] std::string sock_dir() const { return dir_ + "/sock"; }

  // One request on the query socket; {"ok":false} when no reply comes within 5 s.
  nlohmann::json ask(const nlohmann::json& request);
  // The workload's runs, polled until `done(runs)` or about 6 s.
  nlohmann::json wait_runs(const std::string& workload,
                           const std::function<bool(const nlohmann::json&)>& done);

  zmq::context_t context_;

 private:
  std::string memwatchd_;
  std::string dir_;
  std::string db_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
};

// True when `runs` are `n` runs, all finished.
bool all_finished(const nlohmann::json& runs, std::size_t n);

// Every event the daemon publishes from the moment this subscribes.
class EventLog {
 public:
  EventLog(DaemonProcess& daemon);
  // Waits for an event that `match` accepts; every event read is kept in seen().
  std::optional<nlohmann::json> wait_for(const std::function<bool(const nlohmann::json&)>& match,
                                         std::chrono::milliseconds timeout);
  [[nodiscard]] const std::vector<nlohmann::json>& seen() const { return seen_; }

 private:
  zmq::socket_t socket_;
  std::vector<nlohmann::json> seen_;
};

}  // namespace memwatch::test
