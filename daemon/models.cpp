#include "models.hpp"

#include "memwatch/model/model_json.hpp"
#include "refit.hpp"

namespace memwatch::daemon {

void ModelCache::reload(const std::string& workload) {
  for (const char* target : {kHostTarget, kDeviceTarget}) {
    const auto text = store_.latest_model(workload, target);
    if (!text) continue;
    try {
      // Parsed outside the lock: a query waits for a pointer swap, never for a parse.
      auto parsed = std::make_shared<const model::Model>(model::model_from_json(*text));
      const std::lock_guard lock(mutex_);
      models_.insert_or_assign({workload, target}, std::move(parsed));
    } catch (const std::exception&) {
      // A model this daemon cannot read (a newer schema): the runs remain and the next refit
      // writes one it can.
    }
  }
}

void ModelCache::reload_all() {
  for (const std::string& w : store_.workloads()) reload(w);
}

std::shared_ptr<const model::Model> ModelCache::find(const std::string& workload,
                                                     const std::string& target) const {
  const std::lock_guard lock(mutex_);
  const auto it = models_.find({workload, target});
  return it == models_.end() ? nullptr : it->second;
}

}  // namespace memwatch::daemon
