// The value types: terms, expressions, functions.
#include "memwatch/model/term.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "memwatch/model/expr.hpp"
#include "memwatch/model/function.hpp"
#include "memwatch/model/term_search.hpp"

namespace memwatch::model {
namespace {

const std::vector<std::string> names{"batch", "dim", "filters"};

TEST(Term, EvaluatesProductsOfPowersAndLogs) {
  const CompoundTerm t{{{0, 1, 0}, {1, 1.5, 0}, {2, 0, 1}}};
  const std::vector<double> x{3, 16, 8};
  EXPECT_DOUBLE_EQ(t.evaluate(x), 3 * std::pow(16.0, 1.5) * std::log2(8.0));
  EXPECT_EQ(t.to_string(names), "batch * dim^(3/2) * log2(filters)");
  EXPECT_EQ(CompoundTerm{}.to_string(names), "1");
}

TEST(Term, AnExponentialFactorIsTwoToTheExponentTimesTheParameter) {
  const CompoundTerm t{{{1, 3, 0}, {2, 2, 0, /*exponential=*/true}}};
  const std::vector<double> x{1, 16, 5};
  EXPECT_DOUBLE_EQ(t.evaluate(x), 16.0 * 16 * 16 * 1024);
  EXPECT_EQ(t.to_string(names), "dim^3 * 4^filters");
  EXPECT_EQ((CompoundTerm{{{0, 1, 0, true}}}.to_string(names)), "2^batch");
}

TEST(Term, ExponentsPrintAsRationals) {
  EXPECT_EQ(format_exponent(3), "3");
  EXPECT_EQ(format_exponent(0.5), "1/2");
  EXPECT_EQ(format_exponent(1.0 / 3), "1/3");
}

TEST(Term, DictionaryHoldsEveryProductUpToTheFactorLimit) {
  TermSearchOptions o;
  const auto nonzero = static_cast<std::size_t>(
      std::count_if(o.exponents.begin(), o.exponents.end(), [](double e) { return e != 0; }));
  // Each parameter is absent or carries one of the non-zero exponents; the empty product is not a
  // term. With three parameters and at most two factors, the full products drop out.
  o.max_factors = 2;
  const auto dict = term_dictionary(3, o);
  const std::size_t all = static_cast<std::size_t>(std::pow(nonzero + 1, 3)) - 1;
  EXPECT_EQ(dict.size(), all - nonzero * nonzero * nonzero);
  for (const auto& t : dict) EXPECT_LE(t.factors.size(), 2u);
  o.log_exponents = {0, 1};
  EXPECT_GT(term_dictionary(3, o).size(), dict.size());
}

TEST(Expr, PrefixTextRoundTripsExactly) {
  // 0.1 has no exact binary form: the round trip must keep every bit anyway.
  const Expr e{{{Op::mul, 0, 0},
                {Op::exp2, 0, 0},
                {Op::mul, 0, 0},
                {Op::constant, 0.1, 0},
                {Op::variable, 0, 2},
                {Op::square, 0, 0},
                {Op::variable, 0, 1}}};
  const std::vector<double> x{2, 5, 7};
  EXPECT_DOUBLE_EQ(e.evaluate(x), std::exp2(0.1 * 7) * 25);
  const Expr back = Expr::from_prefix(e.to_prefix(names), names);
  EXPECT_EQ(back, e);
  EXPECT_EQ(e.subtree_end(2), 5u);
  EXPECT_EQ(e.subtree_end(0), e.nodes.size());
}

TEST(Expr, MalformedPrefixTextIsRejected) {
  EXPECT_THROW((void)Expr::from_prefix("mul batch", names), std::invalid_argument);
  EXPECT_THROW((void)Expr::from_prefix("batch dim", names), std::invalid_argument);
  EXPECT_THROW((void)Expr::from_prefix("mul batch depth", names), std::invalid_argument);
}

TEST(Function, EvaluatesConstantPlusWeightedFeatures) {
  Function f;
  f.constant = 10;
  f.features = {CompoundTerm{{{0, 1, 0}}}, Expr{{{Op::square, 0, 0}, {Op::variable, 0, 1}}}};
  f.coefficients = {2, 3};
  const std::vector<double> x{4, 5, 6};
  EXPECT_DOUBLE_EQ(f.evaluate(x), 10 + 2 * 4 + 3 * 25);
  EXPECT_EQ(f.to_string(names), "10 + 2 * batch + 3 * (dim)^2");
}

}  // namespace
}  // namespace memwatch::model
