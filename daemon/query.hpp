// The query endpoint's request table: one handler per op, its required fields kept as data.
// Requests and replies are JSON objects; every reply has "ok", and a malformed or unknown
// request gets {"ok":false,"error":"..."}.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "models.hpp"
#include "store.hpp"

namespace memwatch::daemon {

struct QueryContext {
  const Store* store;  // read only: the query thread's own connection
  const ModelCache* models;
  std::function<nlohmann::json()> status;  // the server's own figures
};

class QueryTable {
 public:
  explicit QueryTable(QueryContext context);
  // Answers one request frame; never throws.
  std::string answer(std::string_view request) const;

 private:
  using Handler = nlohmann::json (QueryTable::*)(const nlohmann::json&) const;
  struct Op {
    std::string_view name;
    std::vector<std::string_view> required;  // string fields the request must carry
    Handler handler;
  };

  nlohmann::json op_status(const nlohmann::json&) const;
  nlohmann::json op_workloads(const nlohmann::json&) const;
  nlohmann::json op_runs(const nlohmann::json&) const;
  nlohmann::json op_model(const nlohmann::json&) const;
  nlohmann::json op_predict(const nlohmann::json&) const;
  nlohmann::json op_max(const nlohmann::json&) const;

  QueryContext context_;
  std::vector<Op> ops_;
};

nlohmann::json run_json(const Run& r);

}  // namespace memwatch::daemon
