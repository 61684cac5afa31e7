#include "store.hpp"

#include "store_postgres.hpp"
#include "store_sqlite.hpp"

namespace memwatch::daemon {

bool is_postgres_location(const std::string& location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

Store::Store(const std::string& location, StoreAccess access) {
  shared_ = is_postgres_location(location);
  if (shared_)
    backend_ = std::make_unique<PostgresStore>(location, access);
  else
    backend_ = std::make_unique<SqliteStore>(location, access);
}

Store::~Store() {
  try {
    flush_samples();
  } catch (const StoreError&) {
    // The store refuses writes (locked past the busy timeout, or gone): these samples were
    // never acknowledged, and the runs they belong to are stored.
  }
}

void Store::add_sample(std::int64_t run, const protocol::Sample& sample) {
  if (queued_.empty()) first_queued_ = std::chrono::steady_clock::now();
  queued_.push_back({run, sample});
}

void Store::flush_samples() {
  if (queued_.empty()) return;
  backend_->write_samples(queued_);
  queued_.clear();
}

}  // namespace memwatch::daemon
