// The daemon's store: every run, its samples and the models fitted from them, in a SQLite file
// (the embedded default) or a PostgreSQL database several daemons share. Every write that is
// acknowledged to a client is committed first, so a daemon killed at any moment loses nothing it
// answered for.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memwatch/protocol/figures.hpp"
#include "memwatch/protocol/wire.hpp"

namespace memwatch::daemon {

struct StoreError : std::runtime_error {
  explicit StoreError(const std::string& what, bool held = false)
      : std::runtime_error(what), locked(held) {}
  bool locked;  // another connection held the file past the busy timeout
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
  std::string scheduler_job;  // Slurm's JOBID or JOBID.STEP; empty: none
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
};

// True when `location` names a PostgreSQL database (postgresql://... or postgres://...) rather
// than a SQLite file.
bool is_postgres_location(const std::string& location);

class Store {
 public:
  // Creates or opens the store at `location`, a SQLite file's path or a PostgreSQL URL (a reader
  // only opens an existing one); throws StoreError.
  explicit Store(const std::string& location, StoreAccess access = StoreAccess::read_write);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  std::int64_t begin_run(const protocol::Hello& hello, double now_unix_s) {
    flush_samples();
    return backend_->begin_run(hello, now_unix_s);
  }
  // Queues a sample. Samples reach the store together, in one transaction that also raises each
  // run's peaks and sample count, at flush_samples or before any other write: a commit per
  // sample cost more than the insert at 20,000 a second, and a transaction left open between
  // them would hold the write lock the refit worker needs.
  void add_sample(std::int64_t run, const protocol::Sample& sample);
  void flush_samples();
  [[nodiscard]] std::size_t queued_samples() const { return queued_.size(); }
  // When the oldest queued sample was queued; meaningful while queued_samples() > 0.
  [[nodiscard]] std::chrono::steady_clock::time_point first_queued() const { return first_queued_; }
  void finish_run(std::int64_t run, const protocol::Bye& bye) {
    flush_samples();  // a late sample must not overwrite the final figures
    backend_->finish_run(run, bye);
  }
  // A run that ended without BYE: its figures become the higher of what it has and `last` (from
  // the shared-memory segment; zero where unknown), its device peaks `last`'s if it has any.
  void mark_killed(std::int64_t run, const protocol::Bye& last) {
    flush_samples();
    backend_->mark_killed(run, last);
  }

  // SQLite: the loop's connection leaves WAL checkpoints to another (they copy pages and would
  // stall the loop); `checkpoint` runs one without blocking writers. PostgreSQL: nothing to do.
  void leave_checkpoints_to_others() { backend_->leave_checkpoints_to_others(); }
  void checkpoint() { backend_->checkpoint(); }

  [[nodiscard]] std::vector<Run> runs(const std::string& workload) const {
    return backend_->runs(workload);
  }
  [[nodiscard]] std::vector<Run> running_on(const std::string& host) const {
    return backend_->running_on(host);
  }
  [[nodiscard]] std::optional<Run> run(std::int64_t id) const { return backend_->run(id); }
  [[nodiscard]] std::vector<std::string> workloads() const { return backend_->workloads(); }
  [[nodiscard]] Counts counts() const { return backend_->counts(); }

  void save_model(const std::string& workload, const std::string& target,
                  const std::string& model_json, std::int64_t runs_used, double now_unix_s) {
    backend_->save_model(workload, target, model_json, runs_used, now_unix_s);
  }
  [[nodiscard]] std::optional<std::string> latest_model(const std::string& workload,
                                                        const std::string& target) const {
    return backend_->latest_model(workload, target);
  }
  [[nodiscard]] ModelsSince models_since(std::int64_t after) const {
    return backend_->models_since(after);
  }
  [[nodiscard]] bool shared() const { return shared_; }  // other daemons may write it

  // Held while a workload is fitted: no two daemons fit the same workload at once.
  class WorkloadClaim {
   public:
    WorkloadClaim(StoreBackend& backend, std::string workload)
        : backend_(backend), workload_(std::move(workload)) {
      backend_.claim_workload(workload_);
    }
    ~WorkloadClaim() {
      try {
        backend_.release_workload(workload_);
      } catch (const StoreError&) {
        // The connection is gone, and the server released the claim with it.
      }
    }
    WorkloadClaim(const WorkloadClaim&) = delete;
    WorkloadClaim& operator=(const WorkloadClaim&) = delete;

   private:
    StoreBackend& backend_;
    std::string workload_;
  };
  [[nodiscard]] WorkloadClaim claim_workload(const std::string& workload) {
    return WorkloadClaim(*backend_, workload);
  }

 private:
  std::unique_ptr<StoreBackend> backend_;
  bool shared_ = false;
  std::vector<QueuedSample> queued_;
  std::chrono::steady_clock::time_point first_queued_;
};

}  // namespace memwatch::daemon
