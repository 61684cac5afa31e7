// Loopback TCP ports no one listens on a moment ago, held together while chosen so that they
// differ: for servers a test starts (memwatchd's endpoints, Prometheus, PostgreSQL).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

namespace memwatch::test {

inline std::vector<int> free_loopback_ports(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0)
      throw std::runtime_error("no free tcp port on 127.0.0.1");
    fds.push_back(fd);
    ports.push_back(ntohs(address.sin_port));
  }
  for (int fd : fds) close(fd);
  return ports;
}

}  // namespace memwatch::test
