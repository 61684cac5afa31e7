// The daemon's store: one SQLite file in WAL mode holding every run, its samples and the
// models fitted from them. Every write that is acknowledged to a client is committed first,
// so a daemon killed at any moment loses nothing it answered for.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
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

// A reader never changes the file: it is the query thread's connection, which WAL lets read
// while the loop's connection writes.
enum class StoreAccess { read_write, read_only };

class Store {
 public:
  // Creates or opens (a reader only opens an existing store); throws StoreError.
  explicit Store(const std::string& path, StoreAccess access = StoreAccess::read_write);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  std::int64_t begin_run(const protocol::Hello& hello, double now_unix_s);
  // Queues a sample. Samples reach the file together, in one transaction that also raises each
  // run's peaks and sample count, at flush_samples or before any other write: a commit per
  // sample (a WAL write) cost more than the insert at 20,000 a second, and a transaction left
  // open between them would hold the write lock the refit worker needs.
  void add_sample(std::int64_t run, const protocol::Sample& sample);
  void flush_samples();
  [[nodiscard]] std::size_t queued_samples() const { return queued_.size(); }
  // When the oldest queued sample was queued; meaningful while queued_samples() > 0.
  [[nodiscard]] std::chrono::steady_clock::time_point first_queued() const { return first_queued_; }
  void finish_run(std::int64_t run, const protocol::Bye& bye);
  // A run that ended without BYE: its figures become the higher of what it has and `last` (from
  // the shared-memory segment; zero where unknown), its device peaks `last`'s if it has any.
  void mark_killed(std::int64_t run, const protocol::Bye& last);

  // The loop's connection leaves WAL checkpoints to another (they copy pages and would stall
  // the loop); `checkpoint` runs one without blocking writers.
  void leave_checkpoints_to_others();
  void checkpoint();

  [[nodiscard]] std::vector<Run> runs(const std::string& workload) const;
  [[nodiscard]] std::vector<Run> running_on(const std::string& host) const;
  [[nodiscard]] std::optional<Run> run(std::int64_t id) const;
  [[nodiscard]] std::vector<std::string> workloads() const;
  [[nodiscard]] Counts counts() const;

  void save_model(const std::string& workload, const std::string& target,
                  const std::string& model_json, std::int64_t runs_used, double now_unix_s);
  [[nodiscard]] std::optional<std::string> latest_model(const std::string& workload,
                                                        const std::string& target) const;

 private:
  void exec(const char* sql);
  // Runs `work` in one BEGIN IMMEDIATE transaction; rolls back and rethrows if it throws.
  template <class Work>
  void in_transaction(Work&& work);
  void upgrade_schema();
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_sample_ = nullptr;  // prepared once: samples come by the thousand
  sqlite3_stmt* update_run_ = nullptr;
  struct QueuedSample {
    std::int64_t run;
    protocol::Sample sample;
  };
  std::vector<QueuedSample> queued_;
  std::chrono::steady_clock::time_point first_queued_;
  std::string path_;
};

}  // namespace memwatch::daemon
