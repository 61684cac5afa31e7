// memwatchd's event loop: one thread polls the ingest ROUTER, the query REP and a one-second
// timer (liveness of running shims). It never blocks on a client: replies to shims are sent
// without waiting and dropped if the shim is gone.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <set>
#include <unordered_map>
#include <zmq.hpp>

#include "curve_auth.hpp"
#include "model_worker.hpp"
#include "models.hpp"
#include "options.hpp"
#include "query.hpp"
#include "run_watch.hpp"
#include "store.hpp"

namespace memwatch::daemon {

struct IngestStats {
  std::uint64_t frames = 0;
  std::uint64_t rejected = 0;  // not a message of ours
  std::uint64_t hellos = 0, samples = 0, byes = 0, killed = 0, warnings = 0;
};

// A shim connected to the ingest socket, by its routing id.
struct Peer {
  std::int64_t run = 0;
  std::string workload;
  std::int64_t peak_bytes = 0;  // host + device peak last recorded in the runs table
  RunWatch watch;               // live memory against the capacities of its HELLO
};

class Server {
 public:
  // Opens the store and binds, as CURVE servers when `curve` is given; throws on failure.
  explicit Server(const Options& options, std::optional<CurveServerKeys> curve = std::nullopt);
  // Serves until `stop` becomes true (checked at least every 100 ms).
  void run(const std::atomic<bool>& stop);

 private:
  void on_ingest();
  void on_query();
  void check_liveness();
  void publish(const nlohmann::json& event);
  void on_hello(const std::string& peer, const protocol::Hello& hello);
  void on_sample(Peer& peer, const protocol::Sample& sample);
  void collect_refits();

  Options options_;
  Store store_;
  zmq::context_t context_;
  zmq::socket_t ingest_;
  zmq::socket_t query_;
  zmq::socket_t events_;
  std::optional<CurveAuth> curve_;
  std::unordered_map<std::string, Peer> peers_;
  ModelCache models_;
  ModelWorker worker_;
  std::string host_;
  IngestStats stats_;
  QueryTable queries_;
  double started_ = 0;
  Counts counts_;
  std::set<std::string> known_workloads_;
};

}  // namespace memwatch::daemon
