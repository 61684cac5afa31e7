// The `--metrics` endpoint: a plain HTTP/1.1 listener on a thread of its own that answers
// `GET /metrics` with the text `render` returns (Prometheus's scrape) and 404 to anything else,
// one request per connection. A slow or silent client is dropped after a second; it never holds
// the daemon's loop, which only posts snapshots.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace memwatch::daemon {

// "PORT" (loopback) or "HOST:PORT" with a dotted IPv4 host; false, with `error`, otherwise.
bool parse_metrics_address(const std::string& text, std::string& host, int& port,
                           std::string& error);

class MetricsServer {
 public:
  // Binds and listens at once (throws std::runtime_error naming the address if it cannot), then
  // serves until destroyed.
  MetricsServer(const std::string& address, std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

 private:
  void run();
  void answer(int client);

  int listener_ = -1;
  std::function<std::string()> render_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace memwatch::daemon
