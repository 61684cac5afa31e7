// A prepared SQLite statement, finalized with its scope: the SQLite store's and the local
// queue's (store_spool.*) one way of binding, stepping and reading.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "store.hpp"

namespace memwatch::daemon {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw StoreError(std::string("store: cannot prepare: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // Bytes, which may hold zeros (a wire frame).
  Statement& bind_bytes(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // Ready to bind and step again, as a statement run once per row of a batch is.
  void reset() { sqlite3_reset(stmt_); }
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(std::string("store: ") + sqlite3_errmsg(db_));
  }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const {
    const auto* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  std::string bytes(int col) const {
    const auto* b = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
    return b ? std::string(b, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : "";
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace memwatch::daemon
