#include "curve_auth.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <zmq_addon.hpp>

namespace memwatch::daemon {

namespace fs = std::filesystem;

namespace {

// libzmq asks this endpoint of its own context about every CURVE handshake (RFC 27).
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// Every handshake that fails is a client refused: a key not on the list (ZAP said 400), a
// client of another server key (protocol), and a client without CURVE, which sees the mismatch
// first and hangs up, so that this side often learns only that the peer went away (no detail).
// A connection dropped before its handshake (a port probe) counts too: it was not let in.
constexpr int kRefusalEvents = ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

std::string file_in(const std::string& dir, std::string_view name) {
  return (fs::path(dir) / name).string();
}

// The public half of `secret`, through libzmq (which has the curve arithmetic).
bool public_of(const protocol::CurveKey& secret, protocol::CurveKey& public_key) {
  char secret_z85[41], public_z85[41];
  if (zmq_z85_encode(secret_z85, secret.data(), secret.size()) == nullptr ||
      zmq_curve_public(public_z85, secret_z85) != 0)
    return false;
  return zmq_z85_decode(public_key.data(), public_z85) != nullptr;
}

bool read_more_clients(const std::string& dir, std::set<protocol::CurveKey>& clients,
                       std::string& error) {
  const fs::path more = fs::path(dir) / protocol::kMoreClientsDir;
  std::error_code ec;
  if (!fs::exists(more, ec)) return true;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(more, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".pub") files.push_back(it->path());
  if (ec) {
    error = "cannot read " + more.string() + ": " + ec.message();
    return false;
  }
  std::sort(files.begin(), files.end());  // the first bad file named is always the same one
  for (const fs::path& f : files) {
    protocol::CurveKey key;
    if (!protocol::read_curve_key(f.string(), key, error)) return false;
    clients.insert(key);
  }
  return true;
}

}  // namespace

std::optional<CurveServerKeys> load_server_keys(const std::string& dir, std::string& error) {
  if (zmq_has("curve") == 0) {
    error = "--curve-keys: this libzmq was built without CURVE (libsodium); cannot encrypt";
    return std::nullopt;
  }
  CurveServerKeys keys;
  const std::string secret_file = file_in(dir, protocol::kServerSecretFile);
  if (!protocol::read_curve_key(secret_file, keys.secret, error)) return std::nullopt;
  const std::string public_file = file_in(dir, protocol::kServerPublicFile);
  std::error_code ec;
  if (fs::exists(public_file, ec)) {
    protocol::CurveKey stored, derived;
    if (!protocol::read_curve_key(public_file, stored, error)) return std::nullopt;
    if (!public_of(keys.secret, derived) || derived != stored) {
      error = public_file + " is not the public key of " + secret_file +
              " (clients holding it would be refused: run `memwatch keygen --force`)";
      return std::nullopt;
    }
  }
  protocol::CurveKey client;
  if (!protocol::read_curve_key(file_in(dir, protocol::kClientPublicFile), client, error))
    return std::nullopt;
  keys.clients.insert(client);
  if (!read_more_clients(dir, keys.clients, error)) return std::nullopt;
  return keys;
}

// The handler answers in the daemon's own loop, not a thread of its own: the key list and the
// count stay on one thread without locks, and a handshake waits at most one turn of the loop
// (a bounded batch of frames), as every other client of the daemon does.
CurveAuth::CurveAuth(zmq::context_t& context, CurveServerKeys keys)
    : context_(context), keys_(std::move(keys)), zap_(context, zmq::socket_type::rep) {
  zap_.set(zmq::sockopt::linger, 0);
  zap_.bind(kZapEndpoint);
}

void CurveAuth::secure(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, zmq::buffer(keys_.secret));
  const std::string endpoint = "inproc://memwatch.monitor." + std::to_string(monitors_.size());
  if (zmq_socket_monitor(socket.handle(), endpoint.c_str(), kRefusalEvents) != 0)
    throw zmq::error_t();
  zmq::socket_t& monitor = monitors_.emplace_back(context_, zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(endpoint);
}

std::vector<zmq::pollitem_t> CurveAuth::poll_items() {
  std::vector<zmq::pollitem_t> items{{zap_.handle(), 0, ZMQ_POLLIN, 0}};
  for (zmq::socket_t& m : monitors_) items.push_back({m.handle(), 0, ZMQ_POLLIN, 0});
  return items;
}

void CurveAuth::serve() {
  answer_zap();
  for (zmq::socket_t& monitor : monitors_) {
    for (;;) {
      std::vector<zmq::message_t> event;
      if (!zmq::recv_multipart(monitor, std::back_inserter(event), zmq::recv_flags::dontwait))
        break;
      std::uint16_t id = 0;
      if (!event.empty() && event[0].size() >= sizeof id)
        std::memcpy(&id, event[0].data(), sizeof id);
      if ((id & kRefusalEvents) != 0) ++refused_;
    }
  }
}

void CurveAuth::answer_zap() {
  for (;;) {
    std::vector<zmq::message_t> request;
    if (!zmq::recv_multipart(zap_, std::back_inserter(request), zmq::recv_flags::dontwait)) return;
    // version, request id, domain, address, routing id, mechanism, credentials...
    const bool well_formed = request.size() >= 7 && request[0].to_string_view() == "1.0";
    bool allowed = false;
    if (well_formed && request[5].to_string_view() == "CURVE" &&
        request[6].size() == protocol::CurveKey{}.size()) {
      protocol::CurveKey key;
      std::memcpy(key.data(), request[6].data(), key.size());
      allowed = keys_.clients.contains(key);
    }
    const std::string id = request.size() >= 2 ? request[1].to_string() : "";
    const std::string_view status = allowed ? "200" : "400";
    const std::string_view text = allowed ? "OK" : "client key not allowed";
    // version, request id, status, its text, user id, metadata
    const std::array<zmq::const_buffer, 6> reply = {zmq::str_buffer("1.0"), zmq::buffer(id),
                                                    zmq::buffer(status),    zmq::buffer(text),
                                                    zmq::const_buffer(),    zmq::const_buffer()};
    (void)zmq::send_multipart(zap_, reply, zmq::send_flags::dontwait);
  }
}

}  // namespace memwatch::daemon
