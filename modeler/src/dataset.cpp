#include "memwatch/model/dataset.hpp"

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

}  // namespace memwatch::model
