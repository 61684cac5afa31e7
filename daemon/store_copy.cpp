#include "store_copy.hpp"

#include "store.hpp"

namespace memwatch::daemon {

namespace {

// Rows read and written at a time: a long copy shows progress, and never holds a whole store in
// memory.
constexpr std::size_t kRunsPerBatch = 2000;
constexpr std::size_t kSamplesPerBatch = 50000;

}  // namespace

CopyProgress copy_store(const std::string& source, const std::string& destination,
                        const std::function<void(const CopyProgress&)>& progress) {
  const auto from = open_backend(source, StoreAccess::read_only);
  const auto to = open_backend(destination, StoreAccess::read_write);
  const Counts held = to->counts();
  const std::size_t held_models = to->models().size();
  if (held.runs > 0 || held_models > 0)
    throw StoreError(without_password(destination) + " already holds " + std::to_string(held.runs) +
                     " runs and " + std::to_string(held_models) +
                     " models; store copy only fills an empty store (name a new SQLite file or "
                     "an empty PostgreSQL database), so that no run is ever stored twice");
  CopyProgress done;
  from->begin_copy();  // one snapshot: a daemon writing SRC meanwhile adds nothing half-copied
  const Counts total = from->counts();
  const std::vector<StoredModel> models = from->models();
  done.total_runs = total.runs;
  done.total_samples = total.samples;
  done.total_models = static_cast<std::int64_t>(models.size());
  to->begin_copy();
  try {
    // Runs first: each sample names its run.
    for (std::int64_t last = 0;;) {
      const std::vector<Run> runs = from->runs_after(last, kRunsPerBatch);
      if (runs.empty()) break;
      to->insert_runs(runs);
      last = runs.back().id;
      done.runs += static_cast<std::int64_t>(runs.size());
      progress(done);
    }
    from->each_sample_batch(kSamplesPerBatch, [&](const std::vector<StoredSample>& batch) {
      to->insert_samples(batch);
      done.samples += static_cast<std::int64_t>(batch.size());
      progress(done);
    });
    to->insert_models(models);
    done.models = done.total_models;
    to->commit_copy();
  } catch (...) {
    to->abort_copy();
    from->abort_copy();
    throw;
  }
  from->abort_copy();  // only read
  progress(done);
  return done;
}

}  // namespace memwatch::daemon
