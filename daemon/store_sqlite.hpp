// The embedded store: one SQLite file in WAL mode. Its commits survive the daemon's own death;
// another connection (the query thread's, the refit worker's) reads while the loop writes.
#pragma once

#include <sqlite3.h>

#include "store.hpp"

namespace memwatch::daemon {

class SqliteStore final : public StoreBackend {
 public:
  // Creates or opens (a reader only opens an existing file); throws StoreError.
  SqliteStore(const std::string& path, StoreAccess access);
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  std::int64_t begin_run(const protocol::Hello& hello, double now_unix_s) override;
  void write_samples(const std::vector<QueuedSample>& batch) override;
  void finish_run(std::int64_t run, const protocol::Bye& bye) override;
  void mark_killed(std::int64_t run, const protocol::Bye& last) override;
  void leave_checkpoints_to_others() override;
  void checkpoint() override;
  [[nodiscard]] std::vector<Run> runs(const std::string& workload) const override;
  [[nodiscard]] std::vector<Run> running_on(const std::string& host) const override;
  [[nodiscard]] std::optional<Run> run(std::int64_t id) const override;
  [[nodiscard]] std::vector<std::string> workloads() const override;
  [[nodiscard]] Counts counts() const override;
  void save_model(const std::string& workload, const std::string& target,
                  const std::string& model_json, std::int64_t runs_used,
                  double now_unix_s) override;
  [[nodiscard]] std::optional<std::string> latest_model(const std::string& workload,
                                                        const std::string& target) const override;
  [[nodiscard]] ModelsSince models_since(std::int64_t after) const override;

  [[nodiscard]] std::vector<Run> runs_after(std::int64_t id, std::size_t limit) const override;
  void each_sample_batch(
      std::size_t batch,
      const std::function<void(const std::vector<StoredSample>&)>& take) const override;
  [[nodiscard]] std::vector<StoredModel> models() const override;
  void begin_copy() override;
  void insert_runs(const std::vector<Run>& runs) override;
  void insert_samples(const std::vector<StoredSample>& samples) override;
  void insert_models(const std::vector<StoredModel>& models) override;
  void commit_copy() override;
  void abort_copy() override;

 private:
  void exec(const char* sql);
  // Runs `work` in one BEGIN IMMEDIATE transaction; rolls back and rethrows if it throws.
  template <class Work>
  void in_transaction(Work&& work);
  void upgrade_schema();
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_sample_ = nullptr;  // prepared once: samples come by the thousand
  sqlite3_stmt* update_run_ = nullptr;
};

}  // namespace memwatch::daemon
