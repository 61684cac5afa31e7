// `memwatch store copy SRC DST`: every run, sample and model of one store into another (a SQLite
// file into PostgreSQL, or back), each row keeping its id. DST must hold no runs and no models:
// a copy never merges, so it can never write a run twice. The copy is one transaction in DST, so
// one that fails or is interrupted leaves DST as it was.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace memwatch::daemon {

struct CopyProgress {
  std::int64_t runs = 0, samples = 0, models = 0;                    // copied so far
  std::int64_t total_runs = 0, total_samples = 0, total_models = 0;  // in SRC
};

// Copies SRC into DST (each a SQLite file's path or a PostgreSQL URL), calling `progress` after
// each batch; returns what was copied. Throws StoreError naming the store at fault: SRC cannot be
// read, DST already holds runs or models, or a write failed.
CopyProgress copy_store(const std::string& source, const std::string& destination,
                        const std::function<void(const CopyProgress&)>& progress);

}  // namespace memwatch::daemon
