// memwatchd's event loop: one thread polls the ingest ROUTER and a one-second timer (liveness
// of running shims); queries are answered on a thread of their own (QueryServer). It never
// blocks on a client: replies to shims are sent without waiting and dropped if the shim is gone.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <zmq.hpp>

#include "curve_auth.hpp"
#include "gone_processes.hpp"
#include "metrics.hpp"
#include "metrics_server.hpp"
#include "model_worker.hpp"
#include "models.hpp"
#include "options.hpp"
#include "orphan_segments.hpp"
#include "query_server.hpp"
#include "run_watch.hpp"
#include "status_board.hpp"
#include "store.hpp"

namespace memwatch::daemon {

// A shim connected to the ingest socket, by its routing id.
struct Peer {
  std::int64_t run = 0;
  std::string workload;
  RunWatch watch;      // live memory against the capacities of its HELLO
  RunMetrics metrics;  // its latest figures and its verdict's prediction, for `--metrics`
};

class Server {
 public:
  // Opens the store and binds, as CURVE servers when `curve` is given; throws on failure.
  explicit Server(const Options& options, std::optional<CurveServerKeys> curve = std::nullopt);
  // Serves until `stop` becomes true (checked at least every 100 ms).
  void run(const std::atomic<bool>& stop);
  [[nodiscard]] StoreHealth store_health() const { return store_.health(); }

 private:
  int on_ingest();  // frames taken
  void check_liveness();
  void sweep_orphan_segments();
  void catch_up_with_others();
  void publish(const nlohmann::json& event);
  void on_hello(const std::string& peer, const protocol::Hello& hello);
  void on_sample(Peer& peer, const protocol::Sample& sample);
  void request_refit(const std::string& workload);
  void collect_refits();
  void flush_when_due(bool arrived);
  void post_metrics();
  void note_prediction_error(const Peer& peer, const protocol::Bye& bye);
  [[nodiscard]] LiveFigures figures() const;
  [[nodiscard]] nlohmann::json status() const;  // called on the query thread

  Options options_;
  Store store_;
  zmq::context_t context_;
  zmq::socket_t ingest_;
  zmq::socket_t events_;
  std::optional<CurveAuth> curve_;
  std::unordered_map<std::string, Peer> peers_;
  ModelCache models_;
  std::int64_t models_seen_ = 0;  // the last model read from the store
  ModelWorker worker_;
  std::string host_;
  OrphanSweep orphans_;                // segments left by processes no stored run names
  SeenTwice<std::int64_t> gone_runs_;  // running runs whose process a liveness check found gone
  IngestStats stats_;
  double started_ = 0;
  Counts counts_;  // as stored at start, runs and samples counted on since
  std::set<std::string> known_workloads_;
  std::set<std::string> refit_when_stored_;  // finished while runs were queued
  Board<LiveFigures> board_;
  std::array<std::uint64_t, 3> verdicts_{};  // by protocol::VerdictKind
  std::map<std::string, PredictionErrors> prediction_errors_;
  Board<MetricsSnapshot> metrics_board_;
  double metrics_posted_ = 0;
  std::optional<QueryServer> queries_;    // its thread and the metrics server's stop before
  std::optional<MetricsServer> metrics_;  // the rest goes
};

}  // namespace memwatch::daemon
