// The local queue of a daemon on a shared store: what it accepts while the PostgreSQL server is
// unreachable (or restarting), kept in order in a SQLite file of its own and written to the
// server when it answers again. Each entry is the frame the shim sent (the wire format, already
// versioned), so a queue outlives the daemon: one restarted on the same file drains it.
//
// Bounded by samples: runs (HELLO, BYE, a run found killed) are always queued, being one row
// each and what a model is fitted from; once `sample_limit` samples wait, further samples are
// dropped and counted (a run's peaks still come from its BYE, or from its shared-memory counters
// when it was killed).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memwatch/protocol/wire.hpp"
#include "store.hpp"

namespace memwatch::daemon {

struct QueueFigures {
  std::int64_t runs = 0;             // runs with anything still queued
  std::int64_t samples = 0;          // samples queued
  std::int64_t dropped_samples = 0;  // refused since start: the queue was full
};

class StoreSpool {
 public:
  // Opens (or creates) the queue file and holds it: a second daemon naming the same file is
  // refused with a StoreError that says so.
  StoreSpool(const std::string& path, std::int64_t sample_limit);
  ~StoreSpool();
  StoreSpool(const StoreSpool&) = delete;
  StoreSpool& operator=(const StoreSpool&) = delete;

  // Each call commits before returning, so what the daemon acknowledges is on disk.
  // A run begun while queued gets a local id, negative, until the server gives it its own.
  std::int64_t add_run(const protocol::Hello& hello, double now_unix_s);
  void add_samples(const std::vector<QueuedSample>& batch);
  void add_finish(std::int64_t run, const protocol::Bye& bye);
  void add_killed(std::int64_t run, const protocol::Bye& last);

  // Writes up to `max_rows` of the oldest entries to `backend`, in order, each forgotten once
  // the backend has committed it. Throws StoreError when the server cannot be reached or undid
  // the transaction in a conflict (what was written stays written, the rest stays queued); an
  // entry the server refuses for another reason is dropped with a line on stderr, so one bad
  // entry cannot hold the queue up forever.
  void drain_some(StoreBackend& backend, std::size_t max_rows);

  [[nodiscard]] bool empty() const { return rows_ == 0; }
  // The server's id of `run` once its HELLO has been written there; `run` itself otherwise.
  [[nodiscard]] std::int64_t stored_id(std::int64_t run) const;
  [[nodiscard]] QueueFigures figures() const;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  struct Entry;
  void add(const char* kind, std::int64_t run, double at, const std::string& frame);
  // Deletes entries [first_seq, last_seq] and records `local` -> `stored` (when local != 0), in
  // one transaction.
  void forget(std::int64_t first_seq, std::int64_t last_seq, const std::vector<Entry>& entries,
              std::int64_t local, std::int64_t stored);
  void exec(const char* sql);

  std::string path_;
  std::int64_t sample_limit_;
  sqlite3* db_ = nullptr;
  std::int64_t rows_ = 0;
  std::int64_t samples_ = 0;
  std::int64_t dropped_ = 0;
  std::map<std::int64_t, std::int64_t> rows_by_run_;  // as the entries name them
  std::map<std::int64_t, std::int64_t> stored_ids_;   // local id -> the server's
};

}  // namespace memwatch::daemon
