// Data built from known formulas, for the tests to check that the modeler gets them back.
#pragma once

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "memwatch/model/dataset.hpp"

namespace memwatch::model::testing {

// A memory-shaped ground truth close to a 3D U-net on CPU: a constant, weights
// (filters^2 * levels), activations (batch * dim^3 * filters) and a workspace in the volume
// alone (dim^3).
inline double unet_truth(const std::vector<double>& x) {
  const double batch = x[0], dim = x[1], filters = x[2], levels = x[3];
  return 3e8 + 2e5 * filters * filters * levels + 80 * batch * dim * dim * dim * filters +
         2000 * dim * dim * dim;
}

// Every combination of the given values, each run's target multiplied by (1 + noise * N(0,1)).
inline Dataset grid(const std::vector<std::string>& names,
                    const std::vector<std::vector<double>>& values,
                    const std::function<double(const std::vector<double>&)>& truth, double noise,
                    unsigned seed) {
  Dataset d;
  d.params = names;
  std::mt19937 rng(seed);
  std::normal_distribution<double> gauss(0, 1);
  std::vector<std::size_t> at(values.size(), 0);
  while (true) {
    std::vector<double> x;
    for (std::size_t p = 0; p < values.size(); ++p) x.push_back(values[p][at[p]]);
    const double y = truth(x) * (1 + noise * gauss(rng));
    d.add(x, y);
    std::size_t p = 0;
    while (p < at.size() && ++at[p] == values[p].size()) at[p++] = 0;
    if (p == at.size()) break;
  }
  return d;
}

inline Dataset unet_grid(double noise, unsigned seed) {
  return grid({"batch", "dim", "filters", "levels"},
              {{1, 2, 4, 8, 16}, {32, 48, 64, 96, 128, 144}, {8, 16, 32}, {3, 4, 5}}, unet_truth,
              noise, seed);
}

// Splits rows at random: `train_fraction` of them in the first set.
inline std::pair<Dataset, Dataset> random_split(const Dataset& d, double train_fraction,
                                                unsigned seed) {
  std::vector<std::size_t> order(d.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  Dataset train = d, test = d;
  train.rows.clear();
  test.rows.clear();
  const auto cut = static_cast<std::size_t>(train_fraction * static_cast<double>(order.size()));
  for (std::size_t i = 0; i < order.size(); ++i)
    (i < cut ? train : test).rows.push_back(d.rows[order[i]]);
  return {train, test};
}

}  // namespace memwatch::model::testing
