// Genetic programming for forms outside the term family (4^levels, say): it evolves one
// expression tree g and scores it as an extra feature of the term search's best model, so the
// constant and every coefficient, g's included, are fitted by least squares (linear scaling, in
// the form Operon uses) and the fitness is the closed-form leave-one-out error. Constants inside
// g are tuned by Levenberg-Marquardt on the projected residual.
#pragma once

#include <cstdint>
#include <vector>

#include "memwatch/model/dataset.hpp"
#include "memwatch/model/hypothesis.hpp"

namespace memwatch::model {

struct GpOptions {
  std::size_t population = 160;
  std::size_t generations = 30;
  std::size_t max_nodes = 13;
  std::size_t tournament = 4;
  std::size_t tuned_per_generation = 8;  // the best few get Levenberg-Marquardt each generation
  std::size_t lm_iterations = 10;
  std::uint64_t seed = 0x6d656d77;  // fixed: the same data gives the same model
  bool nonnegative = true;
  Loss loss = Loss::squared;  // what the hypotheses built on the tree are fitted by
};

// Hypotheses built from `base`'s features plus the best tree found, and with each of base's
// features dropped in turn (the tree may replace a term that only approximated it); valid ones
// only, by leave-one-out MAPE.
[[nodiscard]] std::vector<Hypothesis> search_gp(const Dataset& d, const Hypothesis& base,
                                                const GpOptions& options);

}  // namespace memwatch::model
