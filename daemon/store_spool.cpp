#include "store_spool.hpp"

#include <cstdio>
#include <variant>

#include "sqlite_statement.hpp"

namespace memwatch::daemon {

namespace {

// `queued` holds entries in arrival order (AUTOINCREMENT: a seq, and so a local id, is never
// reused); `stored_ids` the server's id of each run begun while queued, kept so that a daemon
// restarted in the middle of a drain still writes that run's samples under its stored id.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS queued (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  run INTEGER NOT NULL,
  at REAL NOT NULL,
  frame BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS stored_ids (
  local INTEGER PRIMARY KEY,
  stored INTEGER NOT NULL);
)sql";

constexpr const char* kRun = "run";
constexpr const char* kSample = "sample";
constexpr const char* kFinish = "finish";
constexpr const char* kKilled = "killed";

template <class Message>
Message decoded(const std::string& frame) {
  const auto message = protocol::decode(frame);
  if (!message || !std::holds_alternative<Message>(*message))
    throw StoreError("the local queue holds an entry that is not a memwatch frame");
  return std::get<Message>(*message);
}

}  // namespace

struct StoreSpool::Entry {
  std::int64_t seq;
  std::string kind;
  std::int64_t run;
  double at;
  std::string frame;
};

StoreSpool::StoreSpool(const std::string& path, std::int64_t sample_limit)
    : path_(path), sample_limit_(sample_limit) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw StoreError("cannot open the local queue " + path + ": " + why);
  }
  try {
    // Held for the daemon's life: two daemons draining one queue would write its runs twice.
    exec("PRAGMA locking_mode=EXCLUSIVE");
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");  // a commit survives the daemon's death (store_sqlite.cpp)
    exec("BEGIN EXCLUSIVE");
    exec(kSchema);
    exec("COMMIT");
  } catch (const StoreError& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    if (e.locked())
      throw StoreError("the local queue " + path +
                           " is held by another memwatchd; give each daemon its own --queue",
                       StoreFault::locked);
    throw StoreError(path + " is not a memwatch queue (" + e.what() + ")");
  }
  Statement count(db_, "SELECT run, kind, COUNT(*) FROM queued GROUP BY run, kind");
  while (count.step()) {
    rows_ += count.integer(2);
    rows_by_run_[count.integer(0)] += count.integer(2);
    if (count.text(1) == kSample) samples_ += count.integer(2);
  }
  Statement ids(db_, "SELECT local, stored FROM stored_ids");
  while (ids.step()) stored_ids_[ids.integer(0)] = ids.integer(1);
}

StoreSpool::~StoreSpool() {
  sqlite3_close(db_);
}

void StoreSpool::exec(const char* sql) {
  char* error = nullptr;
  if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error); rc != SQLITE_OK) {
    const std::string why = error ? error : "unknown error";
    sqlite3_free(error);
    throw StoreError("local queue " + path_ + ": " + why,
                     (rc & 0xff) == SQLITE_BUSY ? StoreFault::locked : StoreFault::refused);
  }
}

void StoreSpool::add(const char* kind, std::int64_t run, double at, const std::string& frame) {
  Statement s(db_, "INSERT INTO queued (kind, run, at, frame) VALUES (?, ?, ?, ?)");
  s.bind(1, std::string(kind)).bind(2, run).bind(3, at).bind_bytes(4, frame);
  s.step();
  ++rows_;
  ++rows_by_run_[run];
}

std::int64_t StoreSpool::add_run(const protocol::Hello& hello, double now_unix_s) {
  // The run's local id is its entry's seq, negated: unique for the file's life.
  Statement next(db_,
                 "SELECT COALESCE(MAX(seq), 0) + 1 FROM sqlite_sequence WHERE name = 'queued'");
  next.step();
  const std::int64_t local = -next.integer(0);
  add(kRun, local, now_unix_s, protocol::encode(hello));
  if (-sqlite3_last_insert_rowid(db_) != local)
    throw StoreError("local queue " + path_ + ": a run's entry did not get the id expected");
  return local;
}

void StoreSpool::add_samples(const std::vector<QueuedSample>& batch) {
  exec("BEGIN");
  try {
    Statement s(db_, "INSERT INTO queued (kind, run, at, frame) VALUES ('sample', ?, 0, ?)");
    for (const QueuedSample& q : batch) {
      if (samples_ >= sample_limit_) {
        ++dropped_;
        continue;
      }
      const std::int64_t run = stored_id(q.run);
      s.bind(1, run).bind_bytes(2, protocol::encode(q.sample));
      s.step();
      s.reset();
      ++rows_;
      ++samples_;
      ++rows_by_run_[run];
    }
    exec("COMMIT");
  } catch (const StoreError&) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void StoreSpool::add_finish(std::int64_t run, const protocol::Bye& bye) {
  add(kFinish, stored_id(run), 0, protocol::encode(bye));
}

void StoreSpool::add_killed(std::int64_t run, const protocol::Bye& last) {
  add(kKilled, stored_id(run), 0, protocol::encode(last));
}

std::int64_t StoreSpool::stored_id(std::int64_t run) const {
  const auto it = stored_ids_.find(run);
  return it == stored_ids_.end() ? run : it->second;
}

QueueFigures StoreSpool::figures() const {
  return {static_cast<std::int64_t>(rows_by_run_.size()), samples_, dropped_};
}

void StoreSpool::forget(std::int64_t first_seq, std::int64_t last_seq,
                        const std::vector<Entry>& entries, std::int64_t local,
                        std::int64_t stored) {
  exec("BEGIN");
  try {
    Statement d(db_, "DELETE FROM queued WHERE seq BETWEEN ? AND ?");
    d.bind(1, first_seq).bind(2, last_seq);
    d.step();
    if (local != 0) {
      Statement m(db_, "INSERT OR REPLACE INTO stored_ids (local, stored) VALUES (?, ?)");
      m.bind(1, local).bind(2, stored);
      m.step();
    }
    exec("COMMIT");
  } catch (const StoreError&) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  if (local != 0) stored_ids_[local] = stored;
  for (const Entry& e : entries) {
    if (e.seq < first_seq || e.seq > last_seq) continue;
    --rows_;
    if (e.kind == kSample) --samples_;
    if (--rows_by_run_[e.run] == 0) rows_by_run_.erase(e.run);
  }
  if (rows_ == 0) {
    // Nothing queued names a local id any more; the loop keeps its own map (stored_ids_) for
    // runs still reporting.
    exec("DELETE FROM stored_ids");
  }
}

void StoreSpool::drain_some(StoreBackend& backend, std::size_t max_rows) {
  std::vector<Entry> entries;
  {
    Statement s(db_, "SELECT seq, kind, run, at, frame FROM queued ORDER BY seq LIMIT ?");
    s.bind(1, static_cast<std::int64_t>(max_rows));
    while (s.step())
      entries.push_back({s.integer(0), s.text(1), s.integer(2), s.real(3), s.bytes(4)});
  }
  for (std::size_t i = 0; i < entries.size();) {
    const Entry& e = entries[i];
    std::size_t next = i + 1;
    std::int64_t local = 0, stored = 0;
    try {
      if (e.kind == kSample) {
        std::vector<QueuedSample> batch;
        for (next = i; next < entries.size() && entries[next].kind == kSample; ++next) {
          const std::int64_t run = stored_id(entries[next].run);
          if (run > 0) batch.push_back({run, decoded<protocol::Sample>(entries[next].frame)});
        }
        if (!batch.empty()) backend.write_samples(batch);
      } else if (e.kind == kRun) {
        local = -e.seq;
        stored = backend.begin_run(decoded<protocol::Hello>(e.frame), e.at);
      } else if (e.kind == kFinish && stored_id(e.run) > 0) {
        backend.finish_run(stored_id(e.run), decoded<protocol::Bye>(e.frame));
      } else if (e.kind == kKilled && stored_id(e.run) > 0) {
        backend.mark_killed(stored_id(e.run), decoded<protocol::Bye>(e.frame));
      }
    } catch (const StoreError& error) {
      if (error.unreachable() || error.conflict()) throw;
      std::fprintf(stderr, "memwatchd: dropping a queued %s of run %lld the store refused: %s\n",
                   e.kind.c_str(), static_cast<long long>(e.run), error.what());
      local = 0;
    }
    forget(e.seq, entries[next - 1].seq, entries, local, stored);
    i = next;
  }
}

}  // namespace memwatch::daemon
