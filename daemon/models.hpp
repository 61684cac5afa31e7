// The latest model of each (workload, target), parsed once and kept for verdicts and queries;
// reloaded from the store whenever the worker refits a workload. The loop reloads and judges,
// the query thread reads: a model is handed out as a shared pointer, so a reload never pulls
// one from under a reader.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "memwatch/model/model.hpp"
#include "store.hpp"

namespace memwatch::daemon {

class ModelCache {
 public:
  // `store` is read from the thread that calls reload; find may be called from any thread.
  explicit ModelCache(const Store& store) : store_(store) {}
  // Reads the latest models of `workload` (every target) from the store.
  void reload(const std::string& workload);
  void reload_all();
  [[nodiscard]] std::shared_ptr<const model::Model> find(const std::string& workload,
                                                         const std::string& target) const;

 private:
  const Store& store_;
  mutable std::mutex mutex_;  // guards models_, held only to look up or swap a pointer
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const model::Model>> models_;
};

}  // namespace memwatch::daemon
