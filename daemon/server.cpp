#include "server.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <iterator>
#include <set>
#include <thread>
#include <zmq_addon.hpp>

#include "memwatch/protocol/parse.hpp"
#include "memwatch/protocol/segment.hpp"
#include "refit.hpp"
#include "verdict.hpp"
#include "warnings.hpp"

namespace memwatch::daemon {

using nlohmann::json;

namespace {

// Frames handled per loop turn: small, so handshakes and liveness checks never wait for a
// whole backlog.
constexpr int kIngestPerTurn = 256;
// Queued samples reach the store once the oldest is this old, or when the socket goes quiet.
// None has been acknowledged to anyone; a HELLO or BYE is written at once.
constexpr std::chrono::milliseconds kFlushEvery{20};
// After a turn that emptied the socket the loop lets frames gather this long: at 200 shims a
// turn per frame or two woke the loop (and ZeroMQ's I/O thread behind it) thousands of times a
// second, and each wake-up took a core from the query thread when it had a reply to make.
constexpr std::chrono::microseconds kGather{1000};
constexpr std::chrono::milliseconds kTick{100};
constexpr double kLivenessEvery = 1.0;
// Segments left by processes no run of the store names (orphan_segments.hpp), swept this often.
constexpr double kOrphanSweepEvery = 60.0;
constexpr double kMetricsEvery = 0.1;  // a scrape sees the loop's figures this fresh
// ZeroMQ I/O threads: the first moves the shims' frames, the second only the queries', so a
// reply is never queued behind thousands of samples.
constexpr int kIoThreads = 2;
constexpr std::uint64_t kIngestIo = 1 << 0, kQueryIo = 1 << 1;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// What the store accepts: the decoder already refused non-finite numbers and over-long frames;
// memory parameters are sizes and counts, never negative, and names are plain words.
bool valid_hello(const protocol::Hello& h) {
  using protocol::valid_name;
  if (!valid_name(h.workload) || h.host.size() > 255 || h.host_capacity_bytes < 0) return false;
  if (!h.scheduler_job.empty() && !valid_name(h.scheduler_job)) return false;
  for (const auto& [name, value] : h.params)
    if (!valid_name(name) || value < 0 || value > 1e15) return false;
  return true;
}

// The store's part of `status`: where it is, whether it answers, and what waits for it.
json store_status(const std::string& location, const StoreHealth& h) {
  json s = {{"location", without_password(location)},
            {"reachable", h.reachable},
            {"queued_runs", h.queued_runs},
            {"queued_samples", h.queued_samples},
            {"dropped_samples", h.dropped_samples}};
  if (!h.reachable) {
    s["unreachable_since_unix_s"] = h.unreachable_since_unix_s;
    s["error"] = h.why;
  }
  if (!h.queue.empty()) s["queue"] = h.queue;
  return s;
}

}  // namespace

Server::Server(const Options& options, std::optional<CurveServerKeys> curve)
    : options_(options),
      store_(options.store, StoreAccess::read_write, {options.queue, options.queue_limit}),
      context_(kIoThreads),
      ingest_(context_, zmq::socket_type::router),
      events_(context_, zmq::socket_type::pub),
      models_(store_),
      worker_(options.store, options.axes),
      host_(this_host()),
      started_(unix_now()) {
  store_.leave_checkpoints_to_others();
  if (store_.health().reachable) {
    counts_ = store_.counts();
    models_.reload_all();
    models_seen_ = store_.models_since(0).last_model;
    for (const std::string& w : store_.workloads()) known_workloads_.insert(w);
  }  // else runs are queued, and catch_up_with_others reads the store once it answers
  zmq::socket_t query(context_, zmq::socket_type::rep);
  for (zmq::socket_t* s : {&ingest_, &query, &events_}) s->set(zmq::sockopt::linger, 0);
  // A shim that is gone or slow never holds the daemon up: replies to it are dropped.
  ingest_.set(zmq::sockopt::sndhwm, 1000);
  ingest_.set(zmq::sockopt::affinity, kIngestIo);
  events_.set(zmq::sockopt::affinity, kIngestIo);
  query.set(zmq::sockopt::affinity, kQueryIo);
  ingest_.set(zmq::sockopt::maxmsgsize, int64_t{64 * 1024});
  query.set(zmq::sockopt::maxmsgsize, int64_t{64 * 1024});
  if (curve) {
    curve_.emplace(context_, std::move(*curve));
    for (zmq::socket_t* s : {&ingest_, &query, &events_}) curve_->secure(*s);
  }
  ingest_.bind(options.ingest);
  query.bind(options.query);
  events_.bind(options.events);
  board_.post(figures());
  queries_.emplace(std::move(query), options.store, models_, [this] { return status(); });
  if (!options.metrics.empty()) {
    post_metrics();
    metrics_.emplace(options.metrics,
                     [this] { return metrics_text(metrics_board_.read(), models_); });
  }
}

void Server::run(const std::atomic<bool>& stop) {
  std::vector<zmq::pollitem_t> items = {{ingest_.handle(), 0, ZMQ_POLLIN, 0}};
  if (curve_)
    for (const zmq::pollitem_t& item : curve_->poll_items()) items.push_back(item);
  double last_liveness = 0;
  double last_orphan_sweep = 0;
  while (!stop.load()) {
    try {
      zmq::poll(items, store_.queued_samples() > 0 ? kFlushEvery : kTick);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;  // a signal: the loop condition decides
      throw;
    }
    // Handshakes first: a client waiting for its key to be judged sends nothing until then.
    if (curve_ && std::any_of(items.begin() + 1, items.end(),
                              [](const zmq::pollitem_t& i) { return i.revents & ZMQ_POLLIN; }))
      curve_->serve();
    const bool arrived = items[0].revents & ZMQ_POLLIN;
    const int taken = arrived ? on_ingest() : 0;
    flush_when_due(arrived);
    collect_refits();
    store_.drain_queue();
    if (!refit_when_stored_.empty()) {
      if (const StoreHealth h = store_.health(); h.reachable && h.queued_runs == 0) {
        for (const std::string& workload : refit_when_stored_) worker_.request(workload);
        refit_when_stored_.clear();
      }
    }
    const double now = unix_now();
    if (now - last_liveness >= kLivenessEvery) {
      try {
        check_liveness();
        if (store_.shared()) catch_up_with_others();
        if (now - last_orphan_sweep >= kOrphanSweepEvery) {
          sweep_orphan_segments();
          last_orphan_sweep = now;
        }
      } catch (const StoreError& e) {
        // The server is away (or undid a read in a conflict): runs are queued meanwhile, and
        // both are tried again in a second.
        if (!e.unreachable() && !e.conflict()) throw;
      }
      last_liveness = now;
    }
    board_.post(figures());
    if (metrics_ && now - metrics_posted_ >= kMetricsEvery) post_metrics();
    if (taken > 0 && taken < kIngestPerTurn) std::this_thread::sleep_for(kGather);
  }
  store_.flush_samples();
}

void Server::flush_when_due(bool arrived) {
  if (store_.queued_samples() == 0) return;
  if (arrived && std::chrono::steady_clock::now() - store_.first_queued() < kFlushEvery) return;
  store_.flush_samples();
}

int Server::on_ingest() {
  int taken = 0;
  for (; taken < kIngestPerTurn; ++taken) {
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(ingest_, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
    ++stats_.frames;
    if (parts.size() != 2) {
      ++stats_.rejected;
      continue;
    }
    const std::string peer = parts[0].to_string();
    const auto message = protocol::decode(parts[1].to_string_view());
    if (!message) {
      ++stats_.rejected;
      continue;
    }
    if (const auto* hello = std::get_if<protocol::Hello>(&*message)) {
      if (!valid_hello(*hello)) {
        ++stats_.rejected;
        continue;
      }
      on_hello(peer, *hello);
      continue;
    }
    const auto it = peers_.find(peer);
    if (it == peers_.end()) {
      ++stats_.rejected;  // a sample or bye from a peer that never said hello
      continue;
    }
    if (const auto* sample = std::get_if<protocol::Sample>(&*message)) {
      on_sample(it->second, *sample);
    } else if (const auto* bye = std::get_if<protocol::Bye>(&*message)) {
      store_.finish_run(it->second.run, *bye);  // on disk before anyone hears of it
      note_prediction_error(it->second, *bye);
      publish({{"event", "run_finished"}, {"run", it->second.run}});
      request_refit(it->second.workload);
      peers_.erase(it);
    } else {
      ++stats_.rejected;
    }
  }
  return taken;
}

void Server::on_hello(const std::string& peer, const protocol::Hello& hello) {
  const std::int64_t run = store_.begin_run(hello, unix_now());  // on disk: acknowledged below
  ++counts_.runs;
  known_workloads_.insert(hello.workload);
  const protocol::Verdict verdict = judge_run(models_, hello);
  ++verdicts_[static_cast<std::size_t>(verdict.kind)];
  RunMetrics metrics;
  metrics.run = run;
  metrics.workload = hello.workload;
  metrics.node = hello.host;
  metrics.scheduler_job = hello.scheduler_job;
  if (verdict.kind != protocol::VerdictKind::no_model) {
    metrics.predicted_target = verdict.target;
    metrics.predicted_bytes = verdict.predicted_bytes;
    metrics.upper_bytes = verdict.upper_bytes;
  }
  peers_[peer] = Peer{run, hello.workload, RunWatch(hello), std::move(metrics)};
  const std::string frame = protocol::encode(verdict);
  std::array<zmq::const_buffer, 2> reply = {zmq::buffer(peer), zmq::buffer(frame)};
  (void)zmq::send_multipart(ingest_, reply, zmq::send_flags::dontwait);
  publish({{"event", "run_started"}, {"run", run}, {"workload", hello.workload}});
  if (verdict.kind == protocol::VerdictKind::over_capacity) {
    ++stats_.warnings;
    publish(predicted_oom_event(verdict, run, hello.workload));
  }
}

void Server::on_sample(Peer& peer, const protocol::Sample& sample) {
  store_.add_sample(peer.run, sample);
  ++counts_.samples;
  peer.metrics.host_live = sample.host_live_bytes;
  peer.metrics.host_peak = sample.host_peak_bytes;
  peer.metrics.device_live = sample.device_live_bytes;
  peer.metrics.device_peak = sample.device_peak_bytes;
  for (const json& warning : peer.watch.observe(sample, options_.watch, peer.run, peer.workload)) {
    ++stats_.warnings;
    publish(warning);
  }
}

// A run finished while the store is away (or its queue drains) is fitted once it is stored: the
// worker reads runs from the store, and would not find it yet.
void Server::request_refit(const std::string& workload) {
  const StoreHealth h = store_.health();
  if (h.reachable && h.queued_runs == 0)
    worker_.request(workload);
  else
    refit_when_stored_.insert(workload);
}

void Server::collect_refits() {
  for (const auto& [workload, outcome] : worker_.take_done()) {
    try {
      models_.reload(workload);
    } catch (const StoreError& e) {
      if (!e.unreachable()) throw;  // read again by catch_up_with_others once it answers
    }
    publish({{"event", "model_updated"}, {"workload", workload}, {"summary", outcome}});
  }
}

void Server::post_metrics() {
  MetricsSnapshot s;
  for (const auto& [id, peer] : peers_) s.running.push_back(peer.metrics);
  s.workloads.assign(known_workloads_.begin(), known_workloads_.end());
  s.prediction_errors = prediction_errors_;
  s.verdicts = verdicts_;
  s.figures = figures();
  s.queued_samples = store_.queued_samples();
  metrics_board_.post(std::move(s));
  metrics_posted_ = unix_now();
}

// How far the verdict's prediction was from the peak the run reached, for the histogram.
void Server::note_prediction_error(const Peer& peer, const protocol::Bye& bye) {
  const RunMetrics& m = peer.metrics;
  if (m.predicted_target.empty()) return;
  const auto measured =
      static_cast<double>(m.predicted_target == protocol::kDevicePeakTarget ? bye.device_peak_bytes
                                                                            : bye.host_peak_bytes);
  if (measured > 0)
    prediction_errors_[peer.workload].add(std::abs(measured - m.predicted_bytes) / measured);
}

LiveFigures Server::figures() const {
  Counts totals = counts_;
  totals.running = static_cast<std::int64_t>(peers_.size());
  totals.workloads = static_cast<std::int64_t>(known_workloads_.size());
  return {totals, stats_, curve_ ? curve_->refused() : 0, store_.health()};
}

json Server::status() const {
  // Only the board and what is fixed at start-up: this runs on the query thread.
  const LiveFigures f = board_.read();
  return {{"runs", f.totals.runs},
          {"running", f.totals.running},
          {"samples", f.totals.samples},
          {"workloads", f.totals.workloads},
          {"frames", f.ingest.frames},
          {"warnings", f.ingest.warnings},
          {"rejected_frames", f.ingest.rejected},
          {"curve", curve_.has_value()},
          {"refused_clients", f.refused_clients},
          {"uptime_s", unix_now() - started_},
          {"db", without_password(options_.store)},
          {"store", store_status(options_.store, f.store)},
          {"ingest", options_.ingest}};
}

// On a shared store other daemons take runs and fit models too: every daemon answers from the
// latest models, and counts every run.
void Server::catch_up_with_others() {
  const ModelsSince since = store_.models_since(models_seen_);
  for (const std::string& workload : since.workloads) models_.reload(workload);
  models_seen_ = since.last_model;
  counts_ = store_.counts();
  for (const std::string& workload : store_.workloads()) known_workloads_.insert(workload);
}

void Server::check_liveness() {
  // A process that ended cleanly may have its BYE queued behind a backlog (a store that held the
  // loop up, a burst of samples), still on its way in: a run is called killed at the second check
  // that finds its process gone, a second later, after every frame that arrived was read.
  std::vector<Run> killed;
  for (const Run& run : store_.running_on(host_))
    if (process_gone(run.pid) && gone_runs_.again(run.id)) killed.push_back(run);
  gone_runs_.next_round();
  if (killed.empty()) return;
  while (on_ingest() == kIngestPerTurn) {
  }
  store_.flush_samples();  // the runs table holds every peak seen so far
  std::set<std::int64_t> still_running;
  for (const Run& run : store_.running_on(host_)) still_running.insert(run.id);
  std::erase_if(killed, [&](const Run& run) { return !still_running.contains(run.id); });
  for (const Run& run : killed) {
    // Died without BYE (SIGKILL, the OOM killer): its counters survive in shared memory, its
    // job's (the run is the job its process was the root of) or its own. Without them the run
    // keeps what its samples raised.
    protocol::Bye last;
    const int pid = static_cast<int>(run.pid);
    auto counters = protocol::job_segment_read(pid);
    if (!counters) counters = protocol::segment_read(pid);
    if (counters) {
      protocol::copy_run_figures(*counters, last);
      last.device_peaks = protocol::device_peaks_of(*counters);
      last.elapsed_s = unix_now() - run.started_unix_s;
    }
    protocol::segment_remove(pid);
    protocol::job_segment_remove(pid);
    store_.mark_killed(run.id, last);
    std::erase_if(peers_,
                  [&](const auto& entry) { return store_.stored_id(entry.second.run) == run.id; });
    publish({{"event", "run_killed"}, {"run", run.id}, {"workload", run.workload}});
  }
}

void Server::sweep_orphan_segments() {
  std::set<int> running;
  for (const Run& run : store_.running_on(host_)) running.insert(static_cast<int>(run.pid));
  orphans_.sweep(running);
}

void Server::publish(const json& event) {
  const std::string text = event.dump();
  (void)events_.send(zmq::buffer(text), zmq::send_flags::dontwait);
}

}  // namespace memwatch::daemon
