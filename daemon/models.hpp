// The latest model of each (workload, target), parsed once and kept for verdicts and queries;
// reloaded from the store whenever the worker refits a workload.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "memwatch/model/model.hpp"
#include "store.hpp"

namespace memwatch::daemon {

class ModelCache {
 public:
  explicit ModelCache(const Store& store) : store_(store) {}
  // Reads the latest models of `workload` (every target) from the store.
  void reload(const std::string& workload);
  void reload_all();
  [[nodiscard]] const model::Model* find(const std::string& workload,
                                         const std::string& target) const;

 private:
  const Store& store_;
  std::map<std::pair<std::string, std::string>, model::Model> models_;
};

}  // namespace memwatch::daemon
