#include "store_postgres.hpp"

#include <charconv>
#include <cstdio>
#include <set>
#include <string_view>
#include <type_traits>
#include <variant>

#include "store_schema.hpp"

namespace memwatch::daemon {

using protocol::Figure;
using protocol::kFigures;

namespace {

// The advisory lock the daemons take while one of them makes or extends the schema.
constexpr std::int64_t kSchemaLock = 0x6d656d7761746368;  // "memwatch"
// Seconds a connection attempt may take: the daemon's loop waits that long at worst, once a
// second, while the server's host does not answer.
constexpr const char* kConnectTimeout = "2";
// Samples per INSERT: six parameters each, under the protocol's 65,535.
constexpr std::size_t kSamplesPerInsert = 5000;

std::string number(std::int64_t v) {
  return std::to_string(v);
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// What a failed statement means for the caller: a server stopped or restarting ends the session
// (nothing more goes through this connection); a transaction undone to resolve a conflict may
// be tried again.
StoreFault fault_of(PGconn* connection, const PGresult* result) {
  if (PQstatus(connection) == CONNECTION_BAD) return StoreFault::unreachable;
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  const std::string_view code = state != nullptr ? state : "";
  // Class 57P: admin_shutdown, crash_shutdown, cannot_connect_now.
  if (code.starts_with("57P")) return StoreFault::unreachable;
  // Class 40: serialization_failure, deadlock_detected, ...
  if (code.starts_with("40")) return StoreFault::conflict;
  return StoreFault::refused;
}

// libpq's messages run over lines ("...failed: No such file\n\tIs the server running ..."): one
// line, for `status` and logs.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\t') c = ' ';
  std::string out;
  for (char c : text)
    if (c != ' ' || (!out.empty() && out.back() != ' ')) out += c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string declaration(const Column& c) {
  return c.name + (c.type == "integer" ? " BIGINT" : " TEXT") + " NOT NULL DEFAULT " +
         c.default_value;
}

constexpr const char* kTables = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id BIGSERIAL PRIMARY KEY,
  workload TEXT NOT NULL,
  params TEXT NOT NULL,
  host TEXT NOT NULL,
  pid BIGINT NOT NULL,
  status TEXT NOT NULL,
  started DOUBLE PRECISION NOT NULL,
  elapsed_s DOUBLE PRECISION NOT NULL DEFAULT 0,
  host_capacity_bytes BIGINT NOT NULL DEFAULT 0,
  exit_cause TEXT NOT NULL DEFAULT '',
  exit_detail BIGINT NOT NULL DEFAULT 0,
  samples BIGINT NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS runs_by_workload ON runs(workload);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status);
CREATE TABLE IF NOT EXISTS samples (
  run_id BIGINT NOT NULL REFERENCES runs(id),
  t_s DOUBLE PRECISION NOT NULL,
  host_live_bytes BIGINT NOT NULL,
  host_peak_bytes BIGINT NOT NULL,
  device_live_bytes BIGINT NOT NULL,
  device_peak_bytes BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS models (
  id BIGSERIAL PRIMARY KEY,
  workload TEXT NOT NULL,
  target TEXT NOT NULL,
  created DOUBLE PRECISION NOT NULL,
  runs BIGINT NOT NULL,
  model TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS models_by_key ON models(workload, target, id);
)sql";

std::string text(const PGresult* r, int row, int col) {
  return PQgetisnull(r, row, col) ? std::string() : PQgetvalue(r, row, col);
}

std::int64_t integer(const PGresult* r, int row, int col) {
  const std::string t = text(r, row, col);
  std::int64_t v = 0;
  std::from_chars(t.data(), t.data() + t.size(), v);
  return v;
}

double real(const PGresult* r, int row, int col) {
  const std::string t = text(r, row, col);
  return t.empty() ? 0 : std::stod(t);
}

Run read_run(const PGresult* r, int row) {
  Run run;
  run.id = integer(r, row, 0);
  run.workload = text(r, row, 1);
  run.params = params_from_json(text(r, row, 2));
  run.host = text(r, row, 3);
  run.pid = integer(r, row, 4);
  run.status = status_from(text(r, row, 5));
  run.started_unix_s = real(r, row, 6);
  run.elapsed_s = real(r, row, 7);
  run.host_capacity_bytes = integer(r, row, 8);
  run.exit_cause = text(r, row, 9);
  run.samples = integer(r, row, 10);
  int col = kFixedRunColumns;
  protocol::for_each_run_figure(
      run, [&](const Figure&, std::int64_t& v) { v = integer(r, row, col++); });
  run.device_peaks = peaks_from_json(text(r, row, col++));
  run.scheduler_job = text(r, row, col++);
  run.exit_detail = integer(r, row, col);
  return run;
}

// "$first, $first+1, ..., $first+n-1"
std::string placeholders(int first, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? ", $" : "$") + std::to_string(first + i);
  return out;
}

}  // namespace

void PostgresStore::check_url(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    const std::string why = error ? error : "out of memory";
    PQfreemem(error);
    throw StoreError("'" + without_password(url) +
                     "' is not a PostgreSQL URL (expected postgresql://USER@HOST/DB): " + why);
  }
  bool has_password = false;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o)
    has_password = has_password || (std::string_view(o->keyword) == "password" &&
                                    o->val != nullptr && *o->val != '\0');
  PQconninfoFree(options);
  // The URL is an argument, and `ps` shows every process's arguments to every user.
  if (has_password)
    throw StoreError("'" + without_password(url) +
                     "' holds a password, which ps shows to every user of this machine: put it "
                     "in ~/.pgpass or the file PGPASSFILE names, or in a libpq service file "
                     "(postgresql:///?service=NAME)");
}

PostgresStore::PostgresStore(const std::string& url, StoreAccess access)
    : server_(without_password(url)) {
  // The URL comes last, so a connect_timeout it sets wins over this default.
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {kConnectTimeout, url.c_str(), nullptr};
  connection_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (PQstatus(connection_) != CONNECTION_OK) {
    const std::string why = one_line(PQerrorMessage(connection_));
    PQfinish(connection_);
    throw StoreError("cannot connect to the PostgreSQL store " + server_ + ": " + why,
                     StoreFault::unreachable);
  }
  if (access == StoreAccess::read_write) make_schema();
}

PostgresStore::~PostgresStore() {
  PQfinish(connection_);
}

PostgresStore::Result PostgresStore::execute(const std::string& sql,
                                             const std::vector<std::string>& params) const {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  Result r(PQexecParams(connection_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                        values.data(), nullptr, nullptr, 0),
           PQclear);
  const ExecStatusType status = PQresultStatus(r.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    const std::string why = r ? PQresultErrorMessage(r.get()) : PQerrorMessage(connection_);
    throw StoreError("store " + server_ + ": " + one_line(why), fault_of(connection_, r.get()));
  }
  return r;
}

template <class Work>
void PostgresStore::in_transaction(Work&& work) {
  execute("BEGIN");
  try {
    work();
    execute("COMMIT");
  } catch (const StoreError&) {
    PQclear(PQexec(connection_, "ROLLBACK"));
    throw;
  }
}

// What the schema lacks, read from the catalogs: no table lock, so it never waits on (or holds
// up) other daemons' writes. Empty when the store is complete.
std::vector<std::string> PostgresStore::missing_schema() const {
  std::vector<std::string> missing;
  const Result objects = execute(
      "SELECT name FROM unnest(ARRAY['runs', 'samples', 'models', 'runs_by_workload', "
      "'runs_by_status', 'models_by_key']) AS name WHERE to_regclass(name) IS NULL");
  for (int row = 0; row < PQntuples(objects.get()); ++row)
    missing.push_back(text(objects.get(), row, 0));
  const Result columns = execute(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
      "AND table_name = 'runs'");
  std::set<std::string> have;
  for (int row = 0; row < PQntuples(columns.get()); ++row) have.insert(text(columns.get(), row, 0));
  for (const Column& c : added_columns())
    if (!have.empty() && have.count(c.name) == 0) missing.push_back("runs." + c.name);
  return missing;
}

void PostgresStore::make_schema() {
  // A complete store is left alone: ALTER TABLE (even ADD COLUMN IF NOT EXISTS) and CREATE INDEX
  // lock the table against writes, and a daemon connecting while others write deadlocked with
  // them (its ALTER queued behind their row locks, their next statement queued behind it).
  if (missing_schema().empty()) return;
  // One daemon at a time: CREATE ... IF NOT EXISTS races with itself across connections.
  in_transaction([this] {
    execute("SELECT pg_advisory_xact_lock(" + number(kSchemaLock) + ")");
    PQclear(PQexec(connection_, "SET LOCAL client_min_messages = warning"));
    Result made(PQexec(connection_, kTables), PQclear);
    if (PQresultStatus(made.get()) != PGRES_COMMAND_OK)
      throw StoreError("store " + server_ + ": " + PQresultErrorMessage(made.get()));
    for (const Column& c : added_columns())
      execute("ALTER TABLE runs ADD COLUMN IF NOT EXISTS " + declaration(c));
  });
}

std::int64_t PostgresStore::begin_run(const protocol::Hello& h, double now_unix_s) {
  const Result r = execute(
      "INSERT INTO runs (workload, params, host, pid, status, started, host_capacity_bytes, "
      "scheduler_job) VALUES ($1, $2, $3, $4, 'running', $5, $6, $7) RETURNING id",
      {h.workload, params_json(h.params), h.host, number(static_cast<std::int64_t>(h.pid)),
       number(h.start_unix_s > 0 ? h.start_unix_s : now_unix_s), number(h.host_capacity_bytes),
       h.scheduler_job});
  return integer(r.get(), 0, 0);
}

void PostgresStore::write_samples(const std::vector<QueuedSample>& batch) {
  in_transaction([&] {
    for (std::size_t from = 0; from < batch.size(); from += kSamplesPerInsert) {
      const std::size_t to = std::min(batch.size(), from + kSamplesPerInsert);
      std::string sql = "INSERT INTO samples VALUES ";
      std::vector<std::string> params;
      for (std::size_t i = from; i < to; ++i) {
        const protocol::Sample& m = batch[i].sample;
        sql +=
            (i > from ? ", (" : "(") + placeholders(static_cast<int>(params.size()) + 1, 6) + ")";
        params.insert(params.end(), {number(batch[i].run), number(m.t_s), number(m.host_live_bytes),
                                     number(m.host_peak_bytes), number(m.device_live_bytes),
                                     number(m.device_peak_bytes)});
      }
      execute(sql, params);
    }
    for (const auto& [run, c] : changes_of(batch)) {
      std::string sql = "UPDATE runs SET ";
      std::vector<std::string> params;
      for (const Figure& f : kFigures)
        if (raised_by_samples(f)) {
          params.push_back(number(c.peaks[protocol::figure_index(f)]));
          sql += std::string(f.name) + " = GREATEST(" + std::string(f.name) + ", $" +
                 std::to_string(params.size()) + "), ";
        }
      params.insert(params.end(), {number(c.last_t_s), number(c.samples), number(run)});
      const auto n = params.size();
      sql += "elapsed_s = GREATEST(elapsed_s, $" + std::to_string(n - 2) +
             "), samples = samples + $" + std::to_string(n - 1) + " WHERE id = $" +
             std::to_string(n);
      execute(sql, params);
    }
  });
}

void PostgresStore::finish_run(std::int64_t run, const protocol::Bye& b) {
  const bool signaled = b.cause == protocol::ExitCause::signal;
  std::vector<std::string> params = {
      signaled ? "signaled" : "finished", number(b.elapsed_s), protocol::exit_cause_name(b.cause),
      number(static_cast<std::int64_t>(b.detail)), peaks_json(b.device_peaks)};
  std::string sql =
      "UPDATE runs SET status = $1, elapsed_s = $2, exit_cause = $3, exit_detail = $4, "
      "device_peaks = $5";
  protocol::for_each_run_figure(b, [&](const Figure& f, std::int64_t v) {
    params.push_back(number(v));
    sql += ", " + std::string(f.name) + " = $" + std::to_string(params.size());
  });
  params.push_back(number(run));
  execute(sql + " WHERE id = $" + std::to_string(params.size()), params);
}

void PostgresStore::mark_killed(std::int64_t run, const protocol::Bye& last) {
  std::vector<std::string> params = {number(last.elapsed_s)};
  std::string sql =
      "UPDATE runs SET status = 'killed', exit_cause = 'killed', elapsed_s = GREATEST(elapsed_s, "
      "$1)";
  if (!last.device_peaks.empty()) {
    params.push_back(peaks_json(last.device_peaks));
    sql += ", device_peaks = $2";
  }
  protocol::for_each_run_figure(last, [&](const Figure& f, std::int64_t v) {
    params.push_back(number(v));
    const std::string name(f.name);
    sql += ", " + name + " = GREATEST(" + name + ", $" + std::to_string(params.size()) + ")";
  });
  params.push_back(number(run));
  // Only a run still running: another daemon may have finished it since it was listed.
  execute(sql + " WHERE id = $" + std::to_string(params.size()) + " AND status = 'running'",
          params);
}

std::vector<Run> PostgresStore::select_runs(const std::string& where,
                                            const std::vector<std::string>& params) const {
  const Result r = execute("SELECT " + run_columns() + " FROM runs WHERE " + where, params);
  std::vector<Run> out;
  for (int row = 0; row < PQntuples(r.get()); ++row) out.push_back(read_run(r.get(), row));
  return out;
}

std::vector<Run> PostgresStore::runs(const std::string& workload) const {
  return select_runs("workload = $1 ORDER BY id", {workload});
}

std::vector<Run> PostgresStore::running_on(const std::string& host) const {
  return select_runs("status = 'running' AND host = $1 ORDER BY id", {host});
}

std::optional<Run> PostgresStore::run(std::int64_t id) const {
  auto found = select_runs("id = $1", {number(id)});
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<std::string> PostgresStore::workloads() const {
  const Result r = execute("SELECT DISTINCT workload FROM runs ORDER BY workload");
  std::vector<std::string> out;
  for (int row = 0; row < PQntuples(r.get()); ++row) out.push_back(text(r.get(), row, 0));
  return out;
}

Counts PostgresStore::counts() const {
  const Result r = execute(
      "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM runs WHERE status = 'running'), "
      "(SELECT COALESCE(SUM(samples), 0) FROM runs), (SELECT COUNT(DISTINCT workload) FROM runs)");
  return {integer(r.get(), 0, 0), integer(r.get(), 0, 1), integer(r.get(), 0, 2),
          integer(r.get(), 0, 3)};
}

void PostgresStore::save_model(const std::string& workload, const std::string& target,
                               const std::string& model_json, std::int64_t runs_used,
                               double now_unix_s) {
  execute("INSERT INTO models (workload, target, created, runs, model) VALUES ($1, $2, $3, $4, $5)",
          {workload, target, number(now_unix_s), number(runs_used), model_json});
}

std::optional<std::string> PostgresStore::latest_model(const std::string& workload,
                                                       const std::string& target) const {
  const Result r = execute(
      "SELECT model FROM models WHERE workload = $1 AND target = $2 ORDER BY id DESC LIMIT 1",
      {workload, target});
  if (PQntuples(r.get()) == 0) return std::nullopt;
  return text(r.get(), 0, 0);
}

ModelsSince PostgresStore::models_since(std::int64_t after) const {
  ModelsSince since{after, {}};
  const Result r = execute("SELECT workload, MAX(id) FROM models WHERE id > $1 GROUP BY workload",
                           {number(after)});
  for (int row = 0; row < PQntuples(r.get()); ++row) {
    since.workloads.push_back(text(r.get(), row, 0));
    since.last_model = std::max(since.last_model, integer(r.get(), row, 1));
  }
  return since;
}

// Session-level advisory locks, in memwatch's key space: held across the fit's transactions.
void PostgresStore::claim_workload(const std::string& workload) {
  execute("SELECT pg_advisory_lock(" + number(kSchemaLock % 2147483647) + "::int, hashtext($1))",
          {workload});
}

void PostgresStore::release_workload(const std::string& workload) {
  execute("SELECT pg_advisory_unlock(" + number(kSchemaLock % 2147483647) + "::int, hashtext($1))",
          {workload});
}

std::vector<Run> PostgresStore::runs_after(std::int64_t id, std::size_t limit) const {
  return select_runs("id > $1 ORDER BY id LIMIT $2",
                     {number(id), number(static_cast<std::int64_t>(limit))});
}

void PostgresStore::each_sample_batch(
    std::size_t batch, const std::function<void(const std::vector<StoredSample>&)>& take) const {
  // A cursor, so that a store of millions of samples is never in memory at once; ctid is the
  // order rows were written in, as long as none was updated (samples never are).
  // Inside a copy's transaction already (begin_copy); otherwise one of its own for the cursor.
  const bool own = PQtransactionStatus(connection_) == PQTRANS_IDLE;
  if (own) execute("BEGIN READ ONLY");
  try {
    execute("DECLARE every_sample NO SCROLL CURSOR FOR SELECT * FROM samples ORDER BY ctid");
    for (;;) {
      const Result r = execute("FETCH " + std::to_string(batch) + " FROM every_sample");
      const int n = PQntuples(r.get());
      if (n == 0) break;
      std::vector<StoredSample> rows;
      rows.reserve(static_cast<std::size_t>(n));
      for (int row = 0; row < n; ++row)
        rows.push_back({integer(r.get(), row, 0), real(r.get(), row, 1), integer(r.get(), row, 2),
                        integer(r.get(), row, 3), integer(r.get(), row, 4),
                        integer(r.get(), row, 5)});
      take(rows);
    }
    execute("CLOSE every_sample");
    if (own) execute("COMMIT");
  } catch (...) {
    if (own) PQclear(PQexec(connection_, "ROLLBACK"));
    throw;
  }
}

std::vector<StoredModel> PostgresStore::models() const {
  const Result r =
      execute("SELECT id, workload, target, created, runs, model FROM models ORDER BY id");
  std::vector<StoredModel> out;
  for (int row = 0; row < PQntuples(r.get()); ++row)
    out.push_back({integer(r.get(), row, 0), text(r.get(), row, 1), text(r.get(), row, 2),
                   real(r.get(), row, 3), integer(r.get(), row, 4), text(r.get(), row, 5)});
  return out;
}

void PostgresStore::begin_copy() {
  execute("BEGIN ISOLATION LEVEL REPEATABLE READ");  // a source's reads see one snapshot
}

void PostgresStore::insert_runs(const std::vector<Run>& runs) {
  const int per_run = static_cast<int>(run_values(Run{}).size());
  // Rows per INSERT: their parameters under the protocol's 65,535.
  const std::size_t per_insert = 60000 / static_cast<std::size_t>(per_run);
  for (std::size_t from = 0; from < runs.size(); from += per_insert) {
    const std::size_t to = std::min(runs.size(), from + per_insert);
    std::string sql = "INSERT INTO runs (" + run_columns() + ") VALUES ";
    std::vector<std::string> params;
    for (std::size_t i = from; i < to; ++i) {
      sql += (i > from ? ", (" : "(") + placeholders(static_cast<int>(params.size()) + 1, per_run) +
             ")";
      for (const ColumnValue& v : run_values(runs[i]))
        params.push_back(std::visit(
            [](const auto& value) -> std::string {
              if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>)
                return value;
              else
                return number(value);
            },
            v));
    }
    execute(sql, params);
  }
}

void PostgresStore::insert_samples(const std::vector<StoredSample>& samples) {
  for (std::size_t from = 0; from < samples.size(); from += kSamplesPerInsert) {
    const std::size_t to = std::min(samples.size(), from + kSamplesPerInsert);
    std::string sql = "INSERT INTO samples VALUES ";
    std::vector<std::string> params;
    for (std::size_t i = from; i < to; ++i) {
      const StoredSample& m = samples[i];
      sql += (i > from ? ", (" : "(") + placeholders(static_cast<int>(params.size()) + 1, 6) + ")";
      params.insert(params.end(), {number(m.run), number(m.t_s), number(m.host_live_bytes),
                                   number(m.host_peak_bytes), number(m.device_live_bytes),
                                   number(m.device_peak_bytes)});
    }
    execute(sql, params);
  }
}

void PostgresStore::insert_models(const std::vector<StoredModel>& models) {
  for (const StoredModel& m : models)
    execute(
        "INSERT INTO models (id, workload, target, created, runs, model) "
        "VALUES ($1, $2, $3, $4, $5, $6)",
        {number(m.id), m.workload, m.target, number(m.created_unix_s), number(m.runs),
         m.model_json});
}

void PostgresStore::commit_copy() {
  // Rows copied with their ids leave the sequences behind: the next run or model would take an
  // id already used.
  for (const char* table : {"runs", "models"})
    execute(std::string("SELECT setval(pg_get_serial_sequence('") + table +
            "', 'id'), GREATEST((SELECT COALESCE(MAX(id), 0) FROM " + table + "), 1), (SELECT " +
            "COUNT(*) > 0 FROM " + table + "))");
  execute("COMMIT");
}

void PostgresStore::abort_copy() {
  PQclear(PQexec(connection_, "ROLLBACK"));
}

}  // namespace memwatch::daemon
