// memwatchd's event loop: one thread polls the ingest ROUTER, the query REP and a one-second
// timer (liveness of running shims). It never blocks on a client: replies to shims are sent
// without waiting and dropped if the shim is gone.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <zmq.hpp>

#include "options.hpp"
#include "query.hpp"
#include "store.hpp"

namespace memwatch::daemon {

struct IngestStats {
  std::uint64_t frames = 0;
  std::uint64_t rejected = 0;  // not a message of ours
  std::uint64_t hellos = 0, samples = 0, byes = 0, killed = 0;
};

class Server {
 public:
  explicit Server(const Options& options);  // opens the store and binds; throws on failure
  // Serves until `stop` becomes true (checked at least every 100 ms).
  void run(const std::atomic<bool>& stop);

 private:
  void on_ingest();
  void on_query();
  void check_liveness();
  void publish(const nlohmann::json& event);

  Options options_;
  Store store_;
  zmq::context_t context_;
  zmq::socket_t ingest_;
  zmq::socket_t query_;
  zmq::socket_t events_;
  std::unordered_map<std::string, std::int64_t> run_by_peer_;  // ROUTER routing id -> run
  std::string host_;
  IngestStats stats_;
  QueryTable queries_;
  double started_ = 0;
};

}  // namespace memwatch::daemon
