// A candidate model: constant + sum of coefficient * feature. A feature is a CompoundTerm from
// the term search or an Expr from the GP search; either way the model stays linear in its
// coefficients, so one least-squares fit and one closed-form leave-one-out serve both.
#pragma once

#include <span>
#include <string>
#include <variant>
#include <vector>

#include "memwatch/model/expr.hpp"
#include "memwatch/model/term.hpp"

namespace memwatch::model {

using Feature = std::variant<CompoundTerm, Expr>;

[[nodiscard]] double evaluate(const Feature& f, std::span<const double> x);
[[nodiscard]] std::string to_string(const Feature& f, std::span<const std::string> names);

struct Function {
  double constant = 0;
  std::vector<double> coefficients;  // one per feature
  std::vector<Feature> features;

  [[nodiscard]] double evaluate(std::span<const double> x) const;
  // "1.2e6 + 3.4 * batch * dim^3 + ..." with coefficients to 6 significant digits.
  [[nodiscard]] std::string to_string(std::span<const std::string> names) const;
};

}  // namespace memwatch::model
