// A store several daemons share: a PostgreSQL database (libpq), named by a URL such as
// postgresql://memwatch@db.cluster/memwatch. Credentials come from the URL's host and user, a
// libpq service file or PGPASSFILE, never a password on a command line. The schema is the
// SQLite store's, made (and extended with columns added since) by the first daemon to connect,
// under an advisory lock.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <vector>

#include "store.hpp"

namespace memwatch::daemon {

class PostgresStore final : public StoreBackend {
 public:
  // Connects (and, to write, makes or extends the schema); throws StoreError naming the server,
  // StoreFault::unreachable when it does not answer within libpq's connect_timeout (2 s unless
  // the URL sets one).
  PostgresStore(const std::string& url, StoreAccess access);
  // Throws StoreError when `url` is not a connection URL libpq can read.
  static void check_url(const std::string& url);
  ~PostgresStore() override;
  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  std::int64_t begin_run(const protocol::Hello& hello, double now_unix_s) override;
  void write_samples(const std::vector<QueuedSample>& batch) override;
  void finish_run(std::int64_t run, const protocol::Bye& bye) override;
  void mark_killed(std::int64_t run, const protocol::Bye& last) override;
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
  void claim_workload(const std::string& workload) override;
  void release_workload(const std::string& workload) override;

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
  using Result = std::unique_ptr<PGresult, void (*)(PGresult*)>;
  // Runs `sql` with text parameters $1, $2, ...; throws StoreError when the server refuses.
  Result execute(const std::string& sql, const std::vector<std::string>& params = {}) const;
  template <class Work>
  void in_transaction(Work&& work);
  std::vector<std::string> missing_schema() const;
  void make_schema();
  std::vector<Run> select_runs(const std::string& where,
                               const std::vector<std::string>& params) const;

  PGconn* connection_ = nullptr;
  std::string server_;  // the URL without its password, for messages
};

}  // namespace memwatch::daemon
