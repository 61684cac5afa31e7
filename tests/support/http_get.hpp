// A plain HTTP/1.0 GET over loopback for tests (1.0: never a chunked reply): the status code
// and the body, or nothing when no server answered.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace memwatch::test {

struct HttpReply {
  int status = 0;
  std::string body;
};

inline std::optional<HttpReply> http_get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<std::uint16_t>(port));
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval wait{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      for (ssize_t n; (n = recv(fd, buffer, sizeof buffer, 0)) > 0;)
        reply.append(buffer, static_cast<std::size_t>(n));
    }
  }
  close(fd);
  const auto end_of_head = reply.find("\r\n\r\n");
  HttpReply r;
  if (end_of_head == std::string::npos ||
      std::sscanf(reply.c_str(), "HTTP/1.%*d %d", &r.status) != 1)
    return std::nullopt;
  r.body = reply.substr(end_of_head + 4);
  return r;
}

// `text` percent-encoded for a URL's query string.
inline std::string url_encoded(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace memwatch::test
