#include "query_client.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <zmq.hpp>

#include "memwatch/protocol/endpoints.hpp"

namespace memwatch::cli {

std::string query_endpoint(const std::string& from_option) {
  if (!from_option.empty()) return from_option;
  if (const char* e = std::getenv("MEMWATCH_QUERY"); e && *e) return e;
  return protocol::default_query_endpoint();
}

nlohmann::json ask_daemon(const std::string& endpoint, const nlohmann::json& request,
                          std::chrono::milliseconds deadline) {
  const std::string no_daemon = "no memwatchd answered at " + endpoint +
                                " (start it with `memwatchd`, or name it with --query)";
  // An ipc endpoint without its socket file has no daemon: say so at once, not after waiting.
  if (endpoint.starts_with("ipc://") && !std::filesystem::exists(endpoint.substr(6)))
    throw std::runtime_error(no_daemon);
  zmq::context_t context(1);
  zmq::socket_t socket(context, zmq::socket_type::req);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::rcvtimeo, static_cast<int>(deadline.count()));
  socket.set(zmq::sockopt::sndtimeo, static_cast<int>(deadline.count()));
  socket.connect(endpoint);
  const std::string text = request.dump();
  zmq::message_t reply;
  if (!socket.send(zmq::buffer(text), zmq::send_flags::none) || !socket.recv(reply))
    throw std::runtime_error(no_daemon);
  auto answer = nlohmann::json::parse(reply.to_string(), nullptr, false);
  if (!answer.is_object()) throw std::runtime_error("memwatchd sent a reply that is not JSON");
  if (answer.value("ok", false) != true)
    throw std::runtime_error(answer.value("error", std::string("the daemon refused")));
  return answer;
}

}  // namespace memwatch::cli
