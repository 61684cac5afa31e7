#include "query_client.hpp"

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

}  // namespace memwatch::cli
