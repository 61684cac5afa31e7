// The query endpoint on a thread of its own, so that a reply never waits behind the loop's
// batch of inserts: it reads runs and models through a read-only connection of its own (WAL
// lets it read while the loop writes), parsed models through the shared cache, and the loop's
// figures through the status board.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "query.hpp"
#include "store.hpp"

namespace memwatch::daemon {

class QueryServer {
 public:
  // Takes over `socket` (bound, and made a CURVE server if it is to be one) and serves it
  // until destroyed.
  QueryServer(zmq::socket_t socket, const std::string& db, const ModelCache& models,
              std::function<nlohmann::json()> status);
  ~QueryServer();
  QueryServer(const QueryServer&) = delete;
  QueryServer& operator=(const QueryServer&) = delete;

 private:
  void run();

  zmq::socket_t socket_;
  Store store_;
  QueryTable table_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace memwatch::daemon
