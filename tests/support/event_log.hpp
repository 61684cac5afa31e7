// Every event a test's memwatchd publishes from the moment the log subscribes.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "daemon_process.hpp"

namespace memwatch::test {

class EventLog {
 public:
  explicit EventLog(Daemon& daemon) : socket_(daemon.context_, zmq::socket_type::sub) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::subscribe, "");
    if (!daemon.client_keys().empty()) make_curve_client(socket_, daemon.client_keys());
    socket_.connect(daemon.events());
    // A subscription takes effect only once the daemon has it; nothing tells us when.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }

  // Waits for an event that `match` accepts; every event read is kept in seen().
  std::optional<nlohmann::json> wait_for(const std::function<bool(const nlohmann::json&)>& match,
                                         std::chrono::milliseconds timeout) {
    for (const auto& e : seen_)
      if (match(e)) return e;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      socket_.set(zmq::sockopt::rcvtimeo, static_cast<int>(std::max<long>(left.count(), 1)));
      zmq::message_t message;
      if (!socket_.recv(message)) continue;
      seen_.push_back(nlohmann::json::parse(message.to_string()));
      if (match(seen_.back())) return seen_.back();
    }
    return std::nullopt;
  }
  [[nodiscard]] const std::vector<nlohmann::json>& seen() const { return seen_; }

 private:
  zmq::socket_t socket_;
  std::vector<nlohmann::json> seen_;
};

}  // namespace memwatch::test
