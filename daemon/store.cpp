#include "store.hpp"

#include <algorithm>
#include <cstdio>

#include "store_postgres.hpp"
#include "store_spool.hpp"
#include "store_sqlite.hpp"

namespace memwatch::daemon {

namespace {

// How often a store whose server does not answer tries again: each try may wait out libpq's
// connect_timeout (store_postgres.cpp) when the server's host does not answer at all.
constexpr std::chrono::seconds kReconnectEvery{1};
// Queue entries written to the server per drain_queue call: a few milliseconds of the loop's
// time, so shims are still served while a long queue drains.
constexpr std::size_t kDrainRows = 2000;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string without_password(const std::string& location) {
  // Plain scanning, not <regex>: std::regex reads the locale's lazily filled ctype cache, which
  // the status thread and the main thread would fill at once.
  std::string blanked = location;
  // user:PASSWORD@host
  if (const auto scheme = blanked.find("://"); scheme != std::string::npos) {
    const auto user_end = blanked.find_first_of(":/@", scheme + 3);
    if (user_end != std::string::npos && blanked[user_end] == ':') {
      const auto at = blanked.find_first_of("@/", user_end + 1);
      if (at != std::string::npos && blanked[at] == '@')
        blanked.replace(user_end + 1, at - user_end - 1, "***");
    }
  }
  // ?password=... or &password=... in the query string
  constexpr std::string_view kKey = "password=";
  for (auto key = blanked.find(kKey); key != std::string::npos; key = blanked.find(kKey, key + 1)) {
    if (key == 0 || (blanked[key - 1] != '?' && blanked[key - 1] != '&')) continue;
    const auto value = key + kKey.size();
    const auto end = std::min(blanked.find('&', value), blanked.size());
    blanked.replace(value, end - value, "***");
  }
  return blanked;
}

bool is_postgres_location(const std::string& location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::unique_ptr<StoreBackend> open_backend(const std::string& location, StoreAccess access) {
  if (is_postgres_location(location)) return std::make_unique<PostgresStore>(location, access);
  return std::make_unique<SqliteStore>(location, access);
}

Store::Store(const std::string& location, StoreAccess access, const QueueSettings& queue)
    : location_(location), access_(access), shared_(is_postgres_location(location)) {
  if (!shared_) {
    backend_ = open_backend(location, access);
    return;
  }
  PostgresStore::check_url(location);  // a typing mistake is refused, not waited for
  if (!queue.path.empty()) spool_ = std::make_unique<StoreSpool>(queue.path, queue.sample_limit);
  connect_if_due();
}

Store::~Store() {
  try {
    flush_samples();
  } catch (const StoreError&) {
    // The store refuses writes (locked past the busy timeout, or gone): these samples were
    // never acknowledged, and the runs they belong to are stored.
  }
}

bool Store::connect_if_due() const {
  if (backend_) return true;
  const auto now = std::chrono::steady_clock::now();
  if (last_attempt_ != std::chrono::steady_clock::time_point{} &&
      now - last_attempt_ < kReconnectEvery)
    return false;
  last_attempt_ = now;
  try {
    backend_ = open_backend(location_, access_);
    unreachable_since_ = 0;
    why_unreachable_.clear();
    return true;
  } catch (const StoreError& e) {
    if (unreachable_since_ == 0) unreachable_since_ = unix_now();
    why_unreachable_ = e.what();
    return false;
  }
}

StoreBackend& Store::connected() const {
  if (!connect_if_due())
    throw StoreError(why_unreachable_.empty() ? "the store is unreachable" : why_unreachable_,
                     StoreFault::unreachable);
  return *backend_;
}

void Store::lost(const std::string& why) const {
  backend_.reset();
  if (unreachable_since_ == 0) unreachable_since_ = unix_now();
  why_unreachable_ = why;
  last_attempt_ = std::chrono::steady_clock::now();
}

template <class Direct, class Queue>
auto Store::write(Direct&& direct, Queue&& queue) {
  if (spool_ && (!spool_->empty() || !connect_if_due())) return queue(*spool_);
  try {
    return call(direct);
  } catch (const StoreError& e) {
    // Not written (the transaction died with the connection, or the server undid or refused
    // it): the queue takes it whole, and the drain tries it again. The daemon goes on serving;
    // an entry the server keeps refusing is dropped there, with a line on stderr.
    if (!spool_) throw;
    return queue(*spool_);
  }
}

std::int64_t Store::begin_run(const protocol::Hello& hello, double now_unix_s) {
  flush_samples();
  return write([&](StoreBackend& b) { return b.begin_run(hello, now_unix_s); },
               [&](StoreSpool& q) { return q.add_run(hello, now_unix_s); });
}

void Store::add_sample(std::int64_t run, const protocol::Sample& sample) {
  if (queued_.empty()) first_queued_ = std::chrono::steady_clock::now();
  queued_.push_back({run, sample});
}

void Store::flush_samples() {
  if (queued_.empty()) return;
  write(
      [&](StoreBackend& b) {
        for (QueuedSample& q : queued_) q.run = stored_id(q.run);
        b.write_samples(queued_);
      },
      [&](StoreSpool& q) { q.add_samples(queued_); });
  queued_.clear();
}

void Store::finish_run(std::int64_t run, const protocol::Bye& bye) {
  flush_samples();  // a late sample must not overwrite the final figures
  write([&](StoreBackend& b) { b.finish_run(stored_id(run), bye); },
        [&](StoreSpool& q) { q.add_finish(run, bye); });
}

void Store::mark_killed(std::int64_t run, const protocol::Bye& last) {
  flush_samples();
  write([&](StoreBackend& b) { b.mark_killed(stored_id(run), last); },
        [&](StoreSpool& q) { q.add_killed(run, last); });
}

void Store::drain_queue() {
  if (!spool_ || spool_->empty()) return;
  flush_samples();  // behind what is queued already
  if (!connect_if_due()) return;
  try {
    spool_->drain_some(*backend_, kDrainRows);
  } catch (const StoreError& e) {
    if (e.unreachable())
      lost(e.what());
    else if (!e.conflict())
      throw;
    // A conflict: the entry stays first in the queue, tried again on the next call.
  }
}

std::int64_t Store::stored_id(std::int64_t run) const {
  return spool_ ? spool_->stored_id(run) : run;
}

StoreHealth Store::health() const {
  StoreHealth h;
  h.reachable = backend_ != nullptr;
  h.unreachable_since_unix_s = unreachable_since_;
  h.why = why_unreachable_;
  if (spool_) {
    const QueueFigures q = spool_->figures();
    h.queued_runs = q.runs;
    h.queued_samples = q.samples;
    h.dropped_samples = q.dropped_samples;
    h.queue = spool_->path();
  }
  return h;
}

}  // namespace memwatch::daemon
