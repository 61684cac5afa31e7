#include "query_client.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <zmq.hpp>

#include "memwatch/protocol/curve_keys.hpp"
#include "memwatch/protocol/endpoints.hpp"
#include "memwatch/protocol/private_dir.hpp"

namespace memwatch::cli {

namespace {

std::string from_option_or_env(const Args& args, const char* option, const char* variable) {
  if (auto v = args.value(option)) return *v;
  if (const char* e = std::getenv(variable); e && *e) return e;
  return "";
}

void make_curve_client(zmq::socket_t& socket, const std::string& dir) {
  if (zmq_has("curve") == 0)
    throw std::runtime_error("this libzmq was built without CURVE (libsodium): cannot use " + dir);
  protocol::CurveClientKeys keys;
  std::string error;
  if (!protocol::read_client_keys(dir, keys, error)) throw UsageError(error);
  socket.set(zmq::sockopt::curve_serverkey, zmq::buffer(keys.server_public));
  socket.set(zmq::sockopt::curve_publickey, zmq::buffer(keys.client_public));
  socket.set(zmq::sockopt::curve_secretkey, zmq::buffer(keys.client_secret));
}

}  // namespace

DaemonQuery daemon_query(const Args& args) {
  DaemonQuery q{from_option_or_env(args, "query", "MEMWATCH_QUERY"),
                from_option_or_env(args, "curve-keys", "MEMWATCH_CURVE_KEYS")};
  if (q.endpoint.empty()) q.endpoint = protocol::default_query_endpoint();
  return q;
}

nlohmann::json ask_daemon(const DaemonQuery& daemon, const nlohmann::json& request,
                          std::chrono::milliseconds deadline) {
  const std::string& endpoint = daemon.endpoint;
  std::string no_daemon = "no memwatchd answered at " + endpoint +
                          " (start it with `memwatchd`, or name it with --query)";
  // A default folder someone else could have made holds whatever socket they put there.
  const std::string folder = protocol::ipc_folder(endpoint);
  if (folder == protocol::default_runtime_dir() && std::filesystem::exists(folder)) {
    const std::string problem = protocol::private_dir_problem(folder);
    if (!problem.empty()) throw std::runtime_error(problem + "; not asking the daemon there");
  }
  // An ipc endpoint without its socket file has no daemon: say so at once, not after waiting.
  if (endpoint.starts_with("ipc://") && !std::filesystem::exists(endpoint.substr(6)))
    throw DaemonUnreachable(no_daemon);
  zmq::context_t context(1);
  zmq::socket_t socket(context, zmq::socket_type::req);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::rcvtimeo, static_cast<int>(deadline.count()));
  socket.set(zmq::sockopt::sndtimeo, static_cast<int>(deadline.count()));
  if (!daemon.curve_keys.empty()) {
    make_curve_client(socket, daemon.curve_keys);
    // A daemon that refuses our key looks like no daemon at all: name the likely cause.
    no_daemon = "no memwatchd answered at " + endpoint + " to the CURVE keys in " +
                daemon.curve_keys + " (is the daemon started with --curve-keys, and is this " +
                std::string(protocol::kClientPublicFile) + " among its client keys?)";
  }
  socket.connect(endpoint);
  const std::string text = request.dump();
  zmq::message_t reply;
  if (!socket.send(zmq::buffer(text), zmq::send_flags::none) || !socket.recv(reply))
    throw DaemonUnreachable(no_daemon);
  auto answer = nlohmann::json::parse(reply.to_string(), nullptr, false);
  if (!answer.is_object()) throw std::runtime_error("memwatchd sent a reply that is not JSON");
  if (answer.value("ok", false) != true)
    throw std::runtime_error(answer.value("error", std::string("the daemon refused")));
  return answer;
}

bool daemon_refuses_connection(const std::string& endpoint, std::chrono::milliseconds wait) {
  if (!endpoint.starts_with("tcp://")) return false;
  const std::string address = endpoint.substr(6);
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "*") host = "127.0.0.1";
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), address.substr(colon + 1).c_str(), &hints, &found) != 0)
    return false;
  bool refused = found != nullptr;
  for (addrinfo* a = found; a != nullptr && refused; a = a->ai_next) {
    const int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      refused = false;
      break;
    }
    int error = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        socklen_t length = sizeof error;
        if (poll(&p, 1, static_cast<int>(wait.count())) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0)
          error = ETIMEDOUT;
      }
    }
    close(fd);
    refused = error == ECONNREFUSED;
  }
  freeaddrinfo(found);
  return refused;
}

std::string params_text(const nlohmann::json& params) {
  std::string out;
  for (const auto& [name, value] : params.items())
    out += (out.empty() ? "" : ",") + name + "=" + value.dump();
  return out;
}

}  // namespace memwatch::cli
