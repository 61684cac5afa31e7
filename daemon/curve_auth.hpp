// The daemon's side of CurveZMQ: its sockets become CURVE servers, a ZAP handler (RFC 27) lets
// in only the client keys listed in the key folder, and every handshake refused (an unknown
// key, a client without CURVE, a wrong server key) is counted for `status`.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "memwatch/protocol/curve_keys.hpp"

namespace memwatch::daemon {

struct CurveServerKeys {
  protocol::CurveKey secret;
  std::set<protocol::CurveKey> clients;  // public keys let in
};

// Reads DIR/server.key, DIR/client.pub and DIR/clients/*.pub (and checks DIR/server.pub, when
// present, against the secret key). On failure returns nullopt and one message naming the file,
// or saying that this libzmq has no CURVE.
std::optional<CurveServerKeys> load_server_keys(const std::string& dir, std::string& error);

class CurveAuth {
 public:
  // Binds the ZAP handler in `context`: before any CURVE server socket of it binds.
  CurveAuth(zmq::context_t& context, CurveServerKeys keys);

  // Makes `socket` a CURVE server whose refused handshakes are counted; before it binds.
  void secure(zmq::socket_t& socket);

  // What the event loop polls for us: the ZAP handler and one monitor per secured socket.
  [[nodiscard]] std::vector<zmq::pollitem_t> poll_items();
  // Answers the ZAP requests and reads the monitor events waiting; never blocks.
  void serve();

  [[nodiscard]] std::uint64_t refused() const { return refused_; }
  [[nodiscard]] std::size_t client_keys() const { return keys_.clients.size(); }

 private:
  void answer_zap();

  zmq::context_t& context_;
  CurveServerKeys keys_;
  zmq::socket_t zap_;
  std::vector<zmq::socket_t> monitors_;
  std::uint64_t refused_ = 0;
};

}  // namespace memwatch::daemon
