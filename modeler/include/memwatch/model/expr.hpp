// An expression tree for the genetic-programming search, stored flat in prefix order so that it
// is a plain value (copyable, comparable, cheap to mutate by splicing index ranges).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memwatch::model {

enum class Op : std::uint8_t { constant, variable, add, mul, exp2, square };

struct Node {
  Op op = Op::constant;
  double value = 0;       // Op::constant
  std::size_t param = 0;  // Op::variable

  bool operator==(const Node&) const = default;
};

[[nodiscard]] int arity(Op op);

struct Expr {
  std::vector<Node> nodes;  // prefix order

  [[nodiscard]] double evaluate(std::span<const double> x) const;
  // Index one past the subtree starting at `start`.
  [[nodiscard]] std::size_t subtree_end(std::size_t start) const;
  // Readable infix form: "2^(2 * levels) * filters^2".
  [[nodiscard]] std::string to_string(std::span<const std::string> names) const;
  // Prefix tokens ("mul exp2 mul 2 levels square filters"), exact for constants; from_prefix
  // reads it back and throws std::invalid_argument on anything else.
  [[nodiscard]] std::string to_prefix(std::span<const std::string> names) const;
  static Expr from_prefix(std::string_view text, std::span<const std::string> names);

  bool operator==(const Expr&) const = default;
};

}  // namespace memwatch::model
