// The model space as value types, after Extra-P: a SimpleTerm is one parameter raised to a power
// (times a power of its log2), a CompoundTerm is a product of SimpleTerms over distinct
// parameters. Coefficients live in Function, not here, so a term can key a dictionary.
#pragma once

#include <compare>
#include <span>
#include <string>
#include <vector>

namespace memwatch::model {

struct SimpleTerm {
  std::size_t param = 0;  // index into the parameter names
  double exponent = 1;    // x^exponent
  int log_exponent = 0;   // * log2(x)^log_exponent
  // 2^(exponent * x) in place of x^exponent (and no log): a parameter each step of which
  // doubles a network's channels, whose weights then grow as 4^x (priors.hpp).
  bool exponential = false;

  // The exponential factor base^x (base 2^exponent): how it is printed and saved.
  [[nodiscard]] static SimpleTerm exponential_in(std::size_t param, double base);
  [[nodiscard]] double base() const;

  [[nodiscard]] double evaluate(std::span<const double> x) const;
  auto operator<=>(const SimpleTerm&) const = default;
};

struct CompoundTerm {
  std::vector<SimpleTerm> factors;  // sorted by param, each param at most once

  [[nodiscard]] double evaluate(std::span<const double> x) const;
  // "batch * dim^3 * log2(filters)"; an empty product reads "1".
  [[nodiscard]] std::string to_string(std::span<const std::string> names) const;
  auto operator<=>(const CompoundTerm&) const = default;
};

// "3", "1/2", "3/2": exponents print as the small rationals they are.
std::string format_exponent(double e);

}  // namespace memwatch::model
