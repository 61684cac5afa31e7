// What every store backend shares: the run's columns as figures.hpp makes them, the JSON kept in
// text columns (parameters, device peaks), run statuses, and how a batch of samples changes
// each run's row.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "memwatch/protocol/figures.hpp"
#include "memwatch/protocol/wire.hpp"
#include "store.hpp"

namespace memwatch::daemon {

struct Column {
  std::string name;
  std::string type;  // "integer" or "text", with the default below
  std::string default_value;
};

// The runs columns added after the first schema: one per run figure (figures.hpp), each device's
// peak as a JSON array, and the batch scheduler's job. A store from before one existed gets its
// column when it is opened.
const std::vector<Column>& added_columns();

// What read_run reads, in its order: kFixedRunColumns fixed columns, then added_columns(), then
// exit_detail.
inline constexpr int kFixedRunColumns = 11;
const std::string& run_columns();

// A run's values in run_columns()'s order, as `memwatch store copy` writes them.
using ColumnValue = std::variant<std::int64_t, double, std::string>;
std::vector<ColumnValue> run_values(const Run& run);

std::string params_json(const protocol::Params& params);
protocol::Params params_from_json(const std::string& text);
std::string peaks_json(const std::vector<std::int64_t>& peaks);
std::vector<std::int64_t> peaks_from_json(const std::string& text);
RunStatus status_from(const std::string& s);

// The figures a SAMPLE raises in its run's row: those that are both sent and kept.
bool raised_by_samples(const protocol::Figure& f);

// What a batch of samples adds to each run's row: one update per run, not one per sample.
struct RunChange {
  std::array<std::int64_t, protocol::kFigureCount> peaks{};  // by figure: raised_by_samples
  std::int64_t samples = 0;
  double last_t_s = 0;
};
std::unordered_map<std::int64_t, RunChange> changes_of(const std::vector<QueuedSample>& batch);

}  // namespace memwatch::daemon
