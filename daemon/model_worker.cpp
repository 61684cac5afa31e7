#include "model_worker.hpp"

#include <chrono>

#include "memwatch/model/model_json.hpp"
#include "refit.hpp"
#include "store.hpp"

namespace memwatch::daemon {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Fits every target the workload has data for and stores the models; returns what happened.
std::string refit(Store& store, const std::string& workload,
                  const std::map<std::string, int>& axes) {
  // Another daemon on a shared store may be fitting it: this fit waits, then takes its runs too.
  const auto claim = store.claim_workload(workload);
  const std::vector<Run> runs = store.runs(workload);
  std::string summary;
  for (const char* target : {kHostTarget, kDeviceTarget}) {
    std::string why;
    const auto m = fit_runs(runs, target, why, axes);
    if (!m) {
      if (std::string(target) == kHostTarget) summary += std::string(target) + ": " + why + "; ";
      continue;
    }
    std::size_t used = 0;
    for (const auto& part : m->parts) used += part.runs;
    store.save_model(workload, target, model::to_json(*m, -1), static_cast<std::int64_t>(used),
                     unix_now());
    char mape[64];
    std::snprintf(mape, sizeof mape, "%.2f%%", m->parts.front().loo_mape * 100);
    summary += std::string(target) + " refitted on " + std::to_string(used) +
               " runs, leave-one-out MAPE " + mape + "; ";
  }
  return summary;
}

}  // namespace

ModelWorker::ModelWorker(std::string db_path, std::map<std::string, int> axes)
    : db_path_(std::move(db_path)), axes_(std::move(axes)), thread_([this] { run(); }) {}

ModelWorker::~ModelWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ModelWorker::request(const std::string& workload) {
  {
    std::lock_guard lock(mutex_);
    pending_.insert(workload);
  }
  wake_.notify_all();
}

std::vector<std::pair<std::string, std::string>> ModelWorker::take_done() {
  std::lock_guard lock(mutex_);
  return std::exchange(done_, {});
}

void ModelWorker::drain() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return pending_.empty() && !busy_; });
}

void ModelWorker::run() {
  std::unique_ptr<Store> store;
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!wake_.wait_for(lock, std::chrono::seconds(1),
                        [this] { return stopping_ || !pending_.empty(); })) {
      lock.unlock();
      try {
        if (!store) store = std::make_unique<Store>(db_path_);
        store->checkpoint();
      } catch (const std::exception&) {
        // The loop's next turn still works; a checkpoint missed is only a longer WAL.
      }
      lock.lock();
      continue;
    }
    if (stopping_) return;
    const std::string workload = *pending_.begin();
    pending_.erase(pending_.begin());
    busy_ = true;
    lock.unlock();
    std::string outcome;
    try {
      if (!store) store = std::make_unique<Store>(db_path_);
      outcome = refit(*store, workload, axes_);
    } catch (const std::exception& e) {
      outcome = std::string("refit failed: ") + e.what();
    }
    lock.lock();
    busy_ = false;
    done_.emplace_back(workload, outcome);
    if (pending_.empty()) idle_.notify_all();
  }
}

}  // namespace memwatch::daemon
