#include "query_server.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>

namespace memwatch::daemon {

namespace {
constexpr std::chrono::milliseconds kStopCheck{100};
}

QueryServer::QueryServer(zmq::socket_t socket, const std::string& db, const ModelCache& models,
                         std::function<nlohmann::json()> status)
    : socket_(std::move(socket)),
      store_(db, StoreAccess::read_only),
      table_({&store_, &models, std::move(status)}),
      thread_([this] { run(); }) {}

QueryServer::~QueryServer() {
  stop_.store(true);
  thread_.join();
}

void QueryServer::run() {
  std::array<zmq::pollitem_t, 1> items = {{{socket_.handle(), 0, ZMQ_POLLIN, 0}}};
  while (!stop_.load()) {
    try {
      if (zmq::poll(items, kStopCheck) == 0) continue;
      zmq::message_t request;
      if (!socket_.recv(request, zmq::recv_flags::dontwait)) continue;
      std::string reply;
      try {
        reply = table_.answer(request.to_string_view());
      } catch (const std::exception&) {  // out of memory: a REP socket still owes an answer
        reply = R"({"ok":false,"error":"the daemon could not answer this request"})";
      }
      socket_.send(zmq::buffer(reply), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      // The context is closing (the daemon stops) or the socket is broken: nothing more to serve.
      if (e.num() != ETERM) std::fprintf(stderr, "memwatchd: query socket: %s\n", e.what());
      return;
    }
  }
}

}  // namespace memwatch::daemon
