#include "memwatch/model/dataset.hpp"

#include <cmath>
#include <numbers>

namespace memwatch::model {

std::vector<Group> split_by_category(const Dataset& d) {
  std::vector<Group> groups;
  std::map<std::vector<std::string>, std::size_t> index;
  for (const auto& row : d.rows) {
    auto [it, fresh] = index.try_emplace(row.labels, groups.size());
    if (fresh) {
      Group g;
      for (std::size_t c = 0; c < d.categories.size(); ++c)
        g.labels[d.categories[c]] = row.labels[c];
      g.data.params = d.params;
      g.data.target = d.target;
      groups.push_back(std::move(g));
    }
    Dataset::Row r = row;
    r.labels.clear();
    groups[it->second].data.rows.push_back(std::move(r));
  }
  return groups;
}

double repetition_noise(const Dataset& d) {
  double variance = 0;
  std::size_t repeated = 0;
  for (const auto& r : d.rows) {
    const auto n = static_cast<double>(r.repetitions.size());
    if (n < 2) continue;
    double mean = 0;
    for (double v : r.repetitions) mean += v / n;
    double sample = 0;
    for (double v : r.repetitions) sample += (v - mean) * (v - mean) / (n - 1);
    // The median of n Gaussian draws varies pi/2 times as much as their mean.
    variance += std::numbers::pi / 2 * sample / n / (r.y * r.y);
    ++repeated;
  }
  return repeated ? std::sqrt(variance / static_cast<double>(repeated)) : 0;
}

}  // namespace memwatch::model
