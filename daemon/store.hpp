// The daemon's store: every run, its samples and the models fitted from them, in a SQLite file
// (the embedded default) or a PostgreSQL database several daemons share. Every write that is
// acknowledged to a client is committed first, so a daemon killed at any moment loses nothing it
// answered for.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memwatch/protocol/figures.hpp"
#include "memwatch/protocol/wire.hpp"

namespace memwatch::daemon {

enum class StoreFault {
  refused,      // the store would not take the request (a bad file, a constraint, ...)
  locked,       // another connection held the SQLite file past the busy timeout
  unreachable,  // the PostgreSQL server cannot be reached, or the connection to it was lost
  conflict,     // PostgreSQL undid the transaction (a deadlock, a serialization failure): it may
                // succeed when tried again
};

struct StoreError : std::runtime_error {
  explicit StoreError(const std::string& what, StoreFault why = StoreFault::refused)
      : std::runtime_error(what), fault(why) {}
  StoreFault fault;
  [[nodiscard]] bool locked() const { return fault == StoreFault::locked; }
  [[nodiscard]] bool unreachable() const { return fault == StoreFault::unreachable; }
  [[nodiscard]] bool conflict() const { return fault == StoreFault::conflict; }
};

enum class RunStatus { running, finished, signaled, killed };
const char* status_name(RunStatus s);

struct Run {
  std::int64_t id = 0;
  std::string workload;
  protocol::Params params;
  std::string host;
  std::int64_t pid = 0;
  RunStatus status = RunStatus::running;
  double started_unix_s = 0;
  double elapsed_s = 0;
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_RUN_MEMBER)  // the run figures, one column each
  std::vector<std::int64_t> device_peaks;       // each device's peak, as BYE sent them
  std::int64_t host_capacity_bytes = 0;
  std::string exit_cause;
  std::int64_t samples = 0;
  std::string scheduler_job;     // Slurm's JOBID or JOBID.STEP; empty: none
  std::int64_t exit_detail = 0;  // the exit status or the signal, by exit_cause
};

// A stored sample as its row holds it, and a stored model: what `memwatch store copy` moves.
struct StoredSample {
  std::int64_t run = 0;
  double t_s = 0;
  std::int64_t host_live_bytes = 0, host_peak_bytes = 0;
  std::int64_t device_live_bytes = 0, device_peak_bytes = 0;
};
struct StoredModel {
  std::int64_t id = 0;
  std::string workload, target;
  double created_unix_s = 0;
  std::int64_t runs = 0;
  std::string model_json;
};

struct Counts {
  std::int64_t runs = 0;
  std::int64_t running = 0;
  std::int64_t samples = 0;
  std::int64_t workloads = 0;
};

// A reader never changes the store: it is the query thread's connection, which WAL (SQLite) or
// MVCC (PostgreSQL) lets read while the loop's connection writes.
enum class StoreAccess { read_write, read_only };

struct ModelsSince {
  std::int64_t last_model = 0;
  std::vector<std::string> workloads;
};

struct QueuedSample {
  std::int64_t run;
  protocol::Sample sample;
};

// Where runs are kept: a SQLite file (store_sqlite.*) or a PostgreSQL database
// (store_postgres.*). Every call either commits or throws StoreError.
class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  virtual std::int64_t begin_run(const protocol::Hello& hello, double now_unix_s) = 0;
  // The samples, and what they raise in each run's row, in one transaction.
  virtual void write_samples(const std::vector<QueuedSample>& batch) = 0;
  virtual void finish_run(std::int64_t run, const protocol::Bye& bye) = 0;
  virtual void mark_killed(std::int64_t run, const protocol::Bye& last) = 0;
  virtual void leave_checkpoints_to_others() {}
  virtual void checkpoint() {}
  [[nodiscard]] virtual std::vector<Run> runs(const std::string& workload) const = 0;
  [[nodiscard]] virtual std::vector<Run> running_on(const std::string& host) const = 0;
  [[nodiscard]] virtual std::optional<Run> run(std::int64_t id) const = 0;
  [[nodiscard]] virtual std::vector<std::string> workloads() const = 0;
  [[nodiscard]] virtual Counts counts() const = 0;
  virtual void save_model(const std::string& workload, const std::string& target,
                          const std::string& model_json, std::int64_t runs_used,
                          double now_unix_s) = 0;
  [[nodiscard]] virtual std::optional<std::string> latest_model(
      const std::string& workload, const std::string& target) const = 0;
  // The workloads with a model saved after model `after` (by any daemon), and the last model's.
  [[nodiscard]] virtual ModelsSince models_since(std::int64_t after) const = 0;
  // Waits until no other daemon fits `workload`, then holds it until release_workload; a store
  // only one daemon writes (SQLite) needs no claim.
  virtual void claim_workload(const std::string&) {}
  virtual void release_workload(const std::string&) {}

  // Every row as stored, for `memwatch store copy` (store_copy.hpp): runs by id in pages, samples
  // in batches in the order they were written, models by id.
  [[nodiscard]] virtual std::vector<Run> runs_after(std::int64_t id, std::size_t limit) const = 0;
  virtual void each_sample_batch(
      std::size_t batch,
      const std::function<void(const std::vector<StoredSample>&)>& take) const = 0;
  [[nodiscard]] virtual std::vector<StoredModel> models() const = 0;
  // One transaction: on the copy's destination, begin_copy, insert_* (rows keep their ids), then
  // commit_copy (which also moves the ids a new row gets past those copied) or abort_copy; on its
  // source, begin_copy and abort_copy around the reads, so they see one snapshot.
  virtual void begin_copy() = 0;
  virtual void insert_runs(const std::vector<Run>& runs) = 0;
  virtual void insert_samples(const std::vector<StoredSample>& samples) = 0;
  virtual void insert_models(const std::vector<StoredModel>& models) = 0;
  virtual void commit_copy() = 0;
  virtual void abort_copy() = 0;
};

// The backend `location` names (a SQLite file's path or a PostgreSQL URL), connected; throws
// StoreError.
std::unique_ptr<StoreBackend> open_backend(const std::string& location, StoreAccess access);

// True when `location` names a PostgreSQL database (postgresql://... or postgres://...) rather
// than a SQLite file.
bool is_postgres_location(const std::string& location);
// `location` with any password in it blanked, for messages and `status`.
std::string without_password(const std::string& location);

class StoreSpool;

// Where a daemon on a shared store queues what it accepts while the server is unreachable
// (store_spool.hpp); an empty path: no queue.
struct QueueSettings {
  std::string path;
  std::int64_t sample_limit = 1'000'000;
};

// The store's state as `status` and the metrics show it.
struct StoreHealth {
  bool reachable = true;
  double unreachable_since_unix_s = 0;  // when the server stopped answering; 0: it answers
  std::string why;                      // the last failure to reach it
  std::int64_t queued_runs = 0, queued_samples = 0, dropped_samples = 0;
  std::string queue;  // the queue's file; empty: none
};

class Store {
  // Defined first: the readers below return what it returns.
  // `work` on the connected backend; throws StoreError (unreachable) when there is none, and
  // drops a connection found lost, so that the next call reconnects.
  template <class Work>
  auto call(Work&& work) const {
    StoreBackend& backend = connected();
    try {
      return work(backend);
    } catch (const StoreError& e) {
      if (e.unreachable()) lost(e.what());
      throw;
    }
  }

 public:
  // Opens the store at `location`, a SQLite file's path or a PostgreSQL URL (a reader only opens
  // an existing one); throws StoreError. A PostgreSQL server that does not answer yet is no
  // error: the store reconnects at most once a second, and until then reads throw StoreError
  // (unreachable) and writes go to the queue, if `queue` names one.
  explicit Store(const std::string& location, StoreAccess access = StoreAccess::read_write,
                 const QueueSettings& queue = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Writes: each is committed to the store, or to the queue, before it returns. A run begun
  // while queueing has a local id (negative) that every later call may keep using.
  std::int64_t begin_run(const protocol::Hello& hello, double now_unix_s);
  // Queues a sample. Samples reach the store together, in one transaction that also raises each
  // run's peaks and sample count, at flush_samples or before any other write: a commit per
  // sample cost more than the insert at 20,000 a second, and a transaction left open between
  // them would hold the write lock the refit worker needs.
  void add_sample(std::int64_t run, const protocol::Sample& sample);
  void flush_samples();
  [[nodiscard]] std::size_t queued_samples() const { return queued_.size(); }
  // When the oldest queued sample was queued; meaningful while queued_samples() > 0.
  [[nodiscard]] std::chrono::steady_clock::time_point first_queued() const { return first_queued_; }
  void finish_run(std::int64_t run, const protocol::Bye& bye);
  // A run that ended without BYE: its figures become the higher of what it has and `last` (from
  // the shared-memory segment; zero where unknown), its device peaks `last`'s if it has any.
  void mark_killed(std::int64_t run, const protocol::Bye& last);
  // Writes the oldest part of the local queue to the server, when there is one and the server
  // answers; a bounded piece per call, so the caller's loop is never held up for long.
  void drain_queue();
  // The id the store knows `run` by: the server's, once a run begun while queueing reached it.
  [[nodiscard]] std::int64_t stored_id(std::int64_t run) const;
  [[nodiscard]] StoreHealth health() const;

  // SQLite: the loop's connection leaves WAL checkpoints to another (they copy pages and would
  // stall the loop); `checkpoint` runs one without blocking writers. PostgreSQL: nothing to do.
  void leave_checkpoints_to_others() {
    if (backend_) backend_->leave_checkpoints_to_others();
  }
  void checkpoint() {
    if (backend_) backend_->checkpoint();
  }

  [[nodiscard]] std::vector<Run> runs(const std::string& workload) const {
    return call([&](StoreBackend& b) { return b.runs(workload); });
  }
  [[nodiscard]] std::vector<Run> running_on(const std::string& host) const {
    return call([&](StoreBackend& b) { return b.running_on(host); });
  }
  [[nodiscard]] std::optional<Run> run(std::int64_t id) const {
    return call([&](StoreBackend& b) { return b.run(id); });
  }
  [[nodiscard]] std::vector<std::string> workloads() const {
    return call([](StoreBackend& b) { return b.workloads(); });
  }
  [[nodiscard]] Counts counts() const {
    return call([](StoreBackend& b) { return b.counts(); });
  }

  void save_model(const std::string& workload, const std::string& target,
                  const std::string& model_json, std::int64_t runs_used, double now_unix_s) {
    call([&](StoreBackend& b) {
      b.save_model(workload, target, model_json, runs_used, now_unix_s);
    });
  }
  [[nodiscard]] std::optional<std::string> latest_model(const std::string& workload,
                                                        const std::string& target) const {
    return call([&](StoreBackend& b) { return b.latest_model(workload, target); });
  }
  [[nodiscard]] ModelsSince models_since(std::int64_t after) const {
    return call([&](StoreBackend& b) { return b.models_since(after); });
  }
  [[nodiscard]] bool shared() const { return shared_; }  // other daemons may write it

  // Held while a workload is fitted: no two daemons fit the same workload at once.
  class WorkloadClaim {
   public:
    WorkloadClaim(Store& store, std::string workload)
        : store_(store), workload_(std::move(workload)) {
      store_.call([&](StoreBackend& b) { b.claim_workload(workload_); });
    }
    ~WorkloadClaim() {
      try {
        store_.call([&](StoreBackend& b) { b.release_workload(workload_); });
      } catch (const StoreError&) {
        // The connection is gone, and the server released the claim with it.
      }
    }
    WorkloadClaim(const WorkloadClaim&) = delete;
    WorkloadClaim& operator=(const WorkloadClaim&) = delete;

   private:
    Store& store_;
    std::string workload_;
  };
  [[nodiscard]] WorkloadClaim claim_workload(const std::string& workload) {
    return WorkloadClaim(*this, workload);
  }

 private:
  // A write: to the backend, or to the queue while it holds anything or the server is away.
  template <class Direct, class Queue>
  auto write(Direct&& direct, Queue&& queue);
  StoreBackend& connected() const;
  bool connect_if_due() const;
  void lost(const std::string& why) const;

  std::string location_;
  StoreAccess access_;
  bool shared_ = false;
  mutable std::unique_ptr<StoreBackend> backend_;  // null while the server is unreachable
  mutable std::chrono::steady_clock::time_point last_attempt_{};
  mutable double unreachable_since_ = 0;
  mutable std::string why_unreachable_;
  std::unique_ptr<StoreSpool> spool_;
  std::vector<QueuedSample> queued_;
  std::chrono::steady_clock::time_point first_queued_;
};

}  // namespace memwatch::daemon
