// Where shims, the daemon and clients meet by default: ipc sockets in a folder only the user
// can enter, under $XDG_RUNTIME_DIR/memwatch or /tmp/memwatch-$UID.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace memwatch::protocol {

inline std::string default_runtime_dir() {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg)
    return std::string(xdg) + "/memwatch";
  return "/tmp/memwatch-" + std::to_string(getuid());
}

inline std::string default_ingest_endpoint() {
  return "ipc://" + default_runtime_dir() + "/ingest";
}
inline std::string default_query_endpoint() {
  return "ipc://" + default_runtime_dir() + "/query";
}
inline std::string default_events_endpoint() {
  return "ipc://" + default_runtime_dir() + "/events";
}

// The folder holding an ipc endpoint's socket; "" for any other transport.
inline std::string ipc_folder(std::string_view endpoint) {
  constexpr std::string_view ipc = "ipc://";
  if (!endpoint.starts_with(ipc)) return "";
  const std::string_view path = endpoint.substr(ipc.size());
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return std::string(slash == 0 ? path.substr(0, 1) : path.substr(0, slash));
}

// A ZeroMQ endpoint memwatch accepts: ipc://PATH, tcp://HOST:PORT or inproc://NAME.
inline bool is_endpoint(std::string_view e) {
  for (std::string_view scheme : {"ipc://", "tcp://", "inproc://"})
    if (e.starts_with(scheme) && e.size() > scheme.size()) return true;
  return false;
}

}  // namespace memwatch::protocol
