#include "metrics_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace memwatch::daemon {

namespace {

constexpr int kWaitMs = 100;         // how often the thread looks at its stop flag
constexpr int kClientWaitMs = 1000;  // how long a client may take to send its request
constexpr std::size_t kMaxRequest = 8192;

void send_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

std::string response(const char* status, const char* type, const std::string& body) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

}  // namespace

bool parse_metrics_address(const std::string& text, std::string& host, int& port,
                           std::string& error) {
  const auto colon = text.rfind(':');
  host = colon == std::string::npos ? "127.0.0.1" : text.substr(0, colon);
  const std::string digits = colon == std::string::npos ? text : text.substr(colon + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  in_addr ignored{};
  if (ec != std::errc() || end != digits.data() + digits.size() || port <= 0 || port > 65535 ||
      inet_pton(AF_INET, host.c_str(), &ignored) != 1) {
    error = "--metrics: expected PORT or HOST:PORT with an IPv4 host (127.0.0.1:9464), got '" +
            text + "'";
    return false;
  }
  return true;
}

MetricsServer::MetricsServer(const std::string& address, std::function<std::string()> render)
    : render_(std::move(render)) {
  std::string host, error;
  int port = 0;
  if (!parse_metrics_address(address, host, port, error)) throw std::runtime_error(error);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &at.sin_addr);
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int yes = 1;
  if (listener_ >= 0) setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 ||
      listen(listener_, 16) != 0) {
    const std::string why = std::strerror(errno);
    if (listener_ >= 0) close(listener_);
    throw std::runtime_error("--metrics " + address + ": cannot listen there: " + why);
  }
  thread_ = std::thread([this] { run(); });
}

MetricsServer::~MetricsServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  close(listener_);
}

void MetricsServer::run() {
  while (!stop_.load()) {
    pollfd item{listener_, POLLIN, 0};
    if (poll(&item, 1, kWaitMs) <= 0) continue;
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    answer(client);
    close(client);
  }
}

void MetricsServer::answer(int client) {
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequest) {
    pollfd item{client, POLLIN, 0};
    if (poll(&item, 1, kClientWaitMs) <= 0) return;
    const ssize_t n = recv(client, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<std::size_t>(n));
  }
  const bool metrics = request.starts_with("GET /metrics ") || request.starts_with("GET /metrics?");
  if (metrics)
    send_all(client, response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_()));
  else
    send_all(client, response("404 Not Found", "text/plain", "memwatchd serves /metrics only\n"));
}

}  // namespace memwatch::daemon
