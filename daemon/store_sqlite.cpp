#include "store_sqlite.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <variant>

#include "sqlite_statement.hpp"
#include "store_schema.hpp"

namespace memwatch::daemon {

namespace {

// A sample's row of the samples table (run, time, host live and peak, device live and peak), for
// a sample as it arrives and as it is copied from another store.
template <class Sample>
void bind_sample(sqlite3_stmt* insert, std::int64_t run, const Sample& m) {
  sqlite3_bind_int64(insert, 1, run);
  sqlite3_bind_double(insert, 2, m.t_s);
  sqlite3_bind_int64(insert, 3, m.host_live_bytes);
  sqlite3_bind_int64(insert, 4, m.host_peak_bytes);
  sqlite3_bind_int64(insert, 5, m.device_live_bytes);
  sqlite3_bind_int64(insert, 6, m.device_peak_bytes);
}

using protocol::Figure;
using protocol::kFigures;

// The runs table as first made; the columns added since (the run figures, ...) follow it
// (added_columns).
constexpr const char* kRunsTable = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  workload TEXT NOT NULL,
  params TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  status TEXT NOT NULL,
  started REAL NOT NULL,
  elapsed_s REAL NOT NULL DEFAULT 0,
  host_capacity_bytes INTEGER NOT NULL DEFAULT 0,
  exit_cause TEXT NOT NULL DEFAULT '',
  exit_detail INTEGER NOT NULL DEFAULT 0,
  samples INTEGER NOT NULL DEFAULT 0)sql";

constexpr const char* kOtherTables = R"sql(
CREATE INDEX IF NOT EXISTS runs_by_workload ON runs(workload);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status);
-- Samples are kept compactly: the shim sends one per high-water step and a heartbeat. Rows are
-- only appended, with no index: one on run_id put a leaf page per running run into every
-- commit (at 200 shims about 800 KB of WAL per 20 ms batch, 42 MB/s), and that write burst was
-- the query thread's latency tail. runs.samples keeps each run's count.
CREATE TABLE IF NOT EXISTS samples (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  t_s REAL NOT NULL,
  host_live_bytes INTEGER NOT NULL,
  host_peak_bytes INTEGER NOT NULL,
  device_live_bytes INTEGER NOT NULL,
  device_peak_bytes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS models (
  id INTEGER PRIMARY KEY,
  workload TEXT NOT NULL,
  target TEXT NOT NULL,
  created REAL NOT NULL,
  runs INTEGER NOT NULL,
  model TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS models_by_key ON models(workload, target, id);
)sql";

// An added column as SQLite declares it.
std::string declaration(const Column& c) {
  return c.name + (c.type == "integer" ? " INTEGER" : " TEXT") + " NOT NULL DEFAULT " +
         c.default_value;
}

std::string schema_sql() {
  std::string sql = kRunsTable;
  for (const Column& c : added_columns()) sql += ",\n  " + declaration(c);
  return sql + "\n);" + kOtherTables;
}

// Finishes its statement before returning: SQLite refuses to change the schema under one.
std::vector<Column> missing_added_columns(sqlite3* db) {
  std::set<std::string> have;
  {
    Statement s(db, "SELECT name FROM pragma_table_info('runs')");
    while (s.step()) have.insert(s.text(0));
  }
  std::vector<Column> missing;
  for (const Column& c : added_columns())
    if (have.count(c.name) == 0) missing.push_back(c);
  return missing;
}

// Finishes its statement before returning: SQLite refuses to change the schema under one.
bool runs_count_samples(sqlite3* db) {
  Statement column(db, "SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name = 'samples'");
  column.step();
  return column.integer(0) > 0;
}

Run read_run(const Statement& s) {
  Run r;
  r.id = s.integer(0);
  r.workload = s.text(1);
  r.params = params_from_json(s.text(2));
  r.host = s.text(3);
  r.pid = s.integer(4);
  r.status = status_from(s.text(5));
  r.started_unix_s = s.real(6);
  r.elapsed_s = s.real(7);
  r.host_capacity_bytes = s.integer(8);
  r.exit_cause = s.text(9);
  r.samples = s.integer(10);
  int col = kFixedRunColumns;
  protocol::for_each_run_figure(r, [&](const Figure&, std::int64_t& v) { v = s.integer(col++); });
  r.device_peaks = peaks_from_json(s.text(col++));
  r.scheduler_job = s.text(col++);
  r.exit_detail = s.integer(col);
  return r;
}

}  // namespace

SqliteStore::SqliteStore(const std::string& path, StoreAccess access) {
  const int flags = access == StoreAccess::read_only ? SQLITE_OPEN_READONLY
                                                     : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("cannot open the database " + path + ": " + why);
  }
  sqlite3_busy_timeout(db_, 5000);
  if (access == StoreAccess::read_only) return;  // the writer made the schema and WAL mode
  try {
    exec("PRAGMA journal_mode=WAL");
    // In WAL mode NORMAL makes every commit survive the daemon's own death (SIGKILL, a crash):
    // it is in the WAL file before the daemon answers. Only an operating-system crash can lose
    // the last commits; FULL would pay an fsync per batch for that.
    exec("PRAGMA synchronous=NORMAL");
    exec(schema_sql().c_str());
    upgrade_schema();
    std::string update_run = "UPDATE runs SET ";
    for (const Figure& f : kFigures)
      if (raised_by_samples(f))
        update_run += std::string(f.name) + " = MAX(" + std::string(f.name) + ", ?), ";
    update_run += "elapsed_s = MAX(elapsed_s, ?), samples = samples + ? WHERE id = ?";
    if (sqlite3_prepare_v3(db_, "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?)", -1,
                           SQLITE_PREPARE_PERSISTENT, &insert_sample_, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v3(db_, update_run.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &update_run_,
                           nullptr) != SQLITE_OK)
      throw StoreError(sqlite3_errmsg(db_));
  } catch (const StoreError& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    if (e.locked())
      throw StoreError(path + " is locked by another program (waited 5 s); stop it, or give " +
                           "this one a database of its own",
                       StoreFault::locked);
    throw StoreError(path + " is not a memwatch database (" + e.what() + ")");
  }
}

SqliteStore::~SqliteStore() {
  sqlite3_finalize(insert_sample_);
  sqlite3_finalize(update_run_);
  sqlite3_close(db_);
}

void SqliteStore::exec(const char* sql) {
  char* error = nullptr;
  if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error); rc != SQLITE_OK) {
    const std::string why = error ? error : "unknown error";
    sqlite3_free(error);
    throw StoreError("store: " + why,
                     (rc & 0xff) == SQLITE_BUSY ? StoreFault::locked : StoreFault::refused);
  }
}

template <class Work>
void SqliteStore::in_transaction(Work&& work) {
  // IMMEDIATE: the write lock is taken (or waited for) at once, never upgraded from a read.
  exec("BEGIN IMMEDIATE");
  try {
    work();
    exec("COMMIT");
  } catch (const StoreError&) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void SqliteStore::upgrade_schema() {
  // A store from before runs.samples: count each run's samples once and drop the index that
  // counting them needed. A store from before a figure (or the device peaks): add its column,
  // zero in the runs it has. In one transaction, so a second connection opening the same file
  // finds the upgrade whole or not at all, and a failure leaves the file as it was. An upgraded
  // file is only read: opening it takes no write lock.
  if (runs_count_samples(db_) && missing_added_columns(db_).empty()) return;
  in_transaction([this] {
    // Asked again: another connection may have upgraded it meanwhile.
    for (const Column& c : missing_added_columns(db_))
      exec(("ALTER TABLE runs ADD COLUMN " + declaration(c)).c_str());
    if (runs_count_samples(db_)) return;
    exec("ALTER TABLE runs ADD COLUMN samples INTEGER NOT NULL DEFAULT 0");
    exec("UPDATE runs SET samples = (SELECT COUNT(*) FROM samples WHERE run_id = runs.id)");
    exec("DROP INDEX IF EXISTS samples_by_run");
  });
}

void SqliteStore::leave_checkpoints_to_others() {
  exec("PRAGMA wal_autocheckpoint=0");
}

void SqliteStore::checkpoint() {
  sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
}

std::int64_t SqliteStore::begin_run(const protocol::Hello& h, double now_unix_s) {
  Statement s(db_,
              "INSERT INTO runs (workload, params, host, pid, status, started, "
              "host_capacity_bytes, scheduler_job) VALUES (?, ?, ?, ?, 'running', ?, ?, ?)");
  s.bind(1, h.workload).bind(2, params_json(h.params)).bind(3, h.host);
  s.bind(4, static_cast<std::int64_t>(h.pid));
  s.bind(5, h.start_unix_s > 0 ? h.start_unix_s : now_unix_s).bind(6, h.host_capacity_bytes);
  s.bind(7, h.scheduler_job);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

void SqliteStore::write_samples(const std::vector<QueuedSample>& batch) {
  auto run_once = [this](sqlite3_stmt* st) {
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) throw StoreError(std::string("store: ") + sqlite3_errmsg(db_));
  };
  in_transaction([&] {
    for (const QueuedSample& q : batch) {
      bind_sample(insert_sample_, q.run, q.sample);
      run_once(insert_sample_);
    }
    for (const auto& [run, c] : changes_of(batch)) {
      int i = 1;
      for (const Figure& f : kFigures)
        if (raised_by_samples(f))
          sqlite3_bind_int64(update_run_, i++, c.peaks[protocol::figure_index(f)]);
      sqlite3_bind_double(update_run_, i++, c.last_t_s);
      sqlite3_bind_int64(update_run_, i++, c.samples);
      sqlite3_bind_int64(update_run_, i, run);
      run_once(update_run_);
    }
  });
}

void SqliteStore::finish_run(std::int64_t run, const protocol::Bye& b) {
  const bool signaled = b.cause == protocol::ExitCause::signal;
  std::string sql =
      "UPDATE runs SET status = ?, elapsed_s = ?, exit_cause = ?, exit_detail = ?, "
      "device_peaks = ?";
  protocol::for_each_run_figure(
      b, [&](const Figure& f, std::int64_t) { sql += ", " + std::string(f.name) + " = ?"; });
  Statement s(db_, (sql + " WHERE id = ?").c_str());
  s.bind(1, std::string(signaled ? "signaled" : "finished")).bind(2, b.elapsed_s);
  s.bind(3, std::string(protocol::exit_cause_name(b.cause)));
  s.bind(4, static_cast<std::int64_t>(b.detail)).bind(5, peaks_json(b.device_peaks));
  int i = 6;
  protocol::for_each_run_figure(b, [&](const Figure&, std::int64_t v) { s.bind(i++, v); });
  s.bind(i, run);
  s.step();
}

void SqliteStore::mark_killed(std::int64_t run, const protocol::Bye& last) {
  std::string sql =
      "UPDATE runs SET status = 'killed', exit_cause = 'killed', elapsed_s = MAX(elapsed_s, ?)";
  if (!last.device_peaks.empty()) sql += ", device_peaks = ?";
  protocol::for_each_run_figure(last, [&](const Figure& f, std::int64_t) {
    const std::string name(f.name);
    sql += ", " + name + " = MAX(" + name + ", ?)";
  });
  // Only a run still running: on a shared store another daemon may have finished it meanwhile.
  Statement s(db_, (sql + " WHERE id = ? AND status = 'running'").c_str());
  int i = 1;
  s.bind(i++, last.elapsed_s);
  if (!last.device_peaks.empty()) s.bind(i++, peaks_json(last.device_peaks));
  protocol::for_each_run_figure(last, [&](const Figure&, std::int64_t v) { s.bind(i++, v); });
  s.bind(i, run);
  s.step();
}

std::vector<Run> SqliteStore::runs(const std::string& workload) const {
  Statement s(db_,
              ("SELECT " + run_columns() + " FROM runs WHERE workload = ? ORDER BY id").c_str());
  s.bind(1, workload);
  std::vector<Run> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

std::vector<Run> SqliteStore::running_on(const std::string& host) const {
  Statement s(db_, ("SELECT " + run_columns() +
                    " FROM runs WHERE status = 'running' AND host = ? ORDER BY id")
                       .c_str());
  s.bind(1, host);
  std::vector<Run> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

std::optional<Run> SqliteStore::run(std::int64_t id) const {
  Statement s(db_, ("SELECT " + run_columns() + " FROM runs WHERE id = ?").c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::vector<std::string> SqliteStore::workloads() const {
  Statement s(db_, "SELECT DISTINCT workload FROM runs ORDER BY workload");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

Counts SqliteStore::counts() const {
  Statement s(db_,
              "SELECT (SELECT COUNT(*) FROM runs), "
              "(SELECT COUNT(*) FROM runs WHERE status = 'running'), "
              "(SELECT COALESCE(SUM(samples), 0) FROM runs), "
              "(SELECT COUNT(DISTINCT workload) FROM runs)");
  s.step();
  return {s.integer(0), s.integer(1), s.integer(2), s.integer(3)};
}

void SqliteStore::save_model(const std::string& workload, const std::string& target,
                             const std::string& model_json, std::int64_t runs_used,
                             double now_unix_s) {
  Statement s(db_,
              "INSERT INTO models (workload, target, created, runs, model) VALUES (?,?,?,?,?)");
  s.bind(1, workload).bind(2, target).bind(3, now_unix_s).bind(4, runs_used).bind(5, model_json);
  s.step();
}

std::optional<std::string> SqliteStore::latest_model(const std::string& workload,
                                                     const std::string& target) const {
  Statement s(
      db_, "SELECT model FROM models WHERE workload = ? AND target = ? ORDER BY id DESC LIMIT 1");
  s.bind(1, workload).bind(2, target);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

ModelsSince SqliteStore::models_since(std::int64_t after) const {
  ModelsSince since{after, {}};
  Statement s(db_, "SELECT workload, MAX(id) FROM models WHERE id > ? GROUP BY workload");
  s.bind(1, after);
  while (s.step()) {
    since.workloads.push_back(s.text(0));
    since.last_model = std::max(since.last_model, s.integer(1));
  }
  return since;
}

std::vector<Run> SqliteStore::runs_after(std::int64_t id, std::size_t limit) const {
  Statement s(db_,
              ("SELECT " + run_columns() + " FROM runs WHERE id > ? ORDER BY id LIMIT ?").c_str());
  s.bind(1, id).bind(2, static_cast<std::int64_t>(limit));
  std::vector<Run> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

void SqliteStore::each_sample_batch(
    std::size_t batch, const std::function<void(const std::vector<StoredSample>&)>& take) const {
  Statement s(db_, "SELECT * FROM samples ORDER BY rowid");
  std::vector<StoredSample> rows;
  while (s.step()) {
    rows.push_back(
        {s.integer(0), s.real(1), s.integer(2), s.integer(3), s.integer(4), s.integer(5)});
    if (rows.size() == batch) take(std::exchange(rows, {}));
  }
  if (!rows.empty()) take(rows);
}

std::vector<StoredModel> SqliteStore::models() const {
  Statement s(db_, "SELECT id, workload, target, created, runs, model FROM models ORDER BY id");
  std::vector<StoredModel> out;
  while (s.step())
    out.push_back({s.integer(0), s.text(1), s.text(2), s.real(3), s.integer(4), s.text(5)});
  return out;
}

void SqliteStore::begin_copy() {
  exec("BEGIN");  // deferred: a reader's snapshot, or the writer's lock at its first insert
}

void SqliteStore::insert_runs(const std::vector<Run>& runs) {
  std::string marks = "?";
  for (std::size_t i = 1; i < run_values(Run{}).size(); ++i) marks += ", ?";
  Statement s(db_, ("INSERT INTO runs (" + run_columns() + ") VALUES (" + marks + ")").c_str());
  for (const Run& run : runs) {
    int i = 1;
    for (const ColumnValue& v : run_values(run))
      std::visit([&](const auto& value) { s.bind(i++, value); }, v);
    s.step();
    s.reset();
  }
}

void SqliteStore::insert_samples(const std::vector<StoredSample>& samples) {
  for (const StoredSample& m : samples) {
    bind_sample(insert_sample_, m.run, m);
    const int rc = sqlite3_step(insert_sample_);
    sqlite3_reset(insert_sample_);
    if (rc != SQLITE_DONE) throw StoreError(std::string("store: ") + sqlite3_errmsg(db_));
  }
}

void SqliteStore::insert_models(const std::vector<StoredModel>& models) {
  Statement s(db_,
              "INSERT INTO models (id, workload, target, created, runs, model) "
              "VALUES (?, ?, ?, ?, ?, ?)");
  for (const StoredModel& m : models) {
    s.bind(1, m.id).bind(2, m.workload).bind(3, m.target).bind(4, m.created_unix_s);
    s.bind(5, m.runs).bind(6, m.model_json);
    s.step();
    s.reset();
  }
}

void SqliteStore::commit_copy() {
  exec("COMMIT");  // an INTEGER PRIMARY KEY goes on from the largest id: nothing to move
}

void SqliteStore::abort_copy() {
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

}  // namespace memwatch::daemon
