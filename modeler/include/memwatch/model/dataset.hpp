// The table the modeler learns from: numeric parameters, categorical parameters (which split the
// data into separate models) and one positive target per run.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace memwatch::model {

struct Dataset {
  struct Row {
    std::vector<double> x;            // one per numeric parameter
    std::vector<std::string> labels;  // one per categorical parameter
    double y = 0;                     // the measurement, or the median of its repetitions
    std::size_t line = 0;             // source line, for messages; 0 when built in memory
    std::vector<double> repetitions;  // the repeated measurements y stands for; empty for one
  };

  std::vector<std::string> params;      // numeric parameter names
  std::vector<std::string> categories;  // categorical parameter names
  std::string target = "value";
  std::vector<Row> rows;
  std::vector<std::string> notes;  // what the parser skipped, and why

  void add(std::vector<double> x, double y, std::vector<std::string> labels = {}) {
    rows.push_back(Row{std::move(x), std::move(labels), y, 0, {}});
  }
};

// One group of rows sharing their categorical labels, keyed by category name -> label.
struct Group {
  std::map<std::string, std::string> labels;
  Dataset data;  // same params and target, no categories
};

// Splits by every distinct combination of categorical labels, in first-seen order; a dataset
// without categories is one group with no labels.
[[nodiscard]] std::vector<Group> split_by_category(const Dataset& d);

// The noise of a run's value (the median of its repetitions) that the repetitions show, relative
// to the value: the root mean square over the runs repeated at least twice; 0 when none was.
[[nodiscard]] double repetition_noise(const Dataset& d);

// One point to predict at: numeric values and categorical labels by name.
struct Point {
  std::map<std::string, double> values;
  std::map<std::string, std::string> labels;
};

}  // namespace memwatch::model
