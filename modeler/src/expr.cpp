#include "memwatch/model/expr.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace memwatch::model {

namespace {

constexpr std::string_view op_name(Op op) {
  switch (op) {
    case Op::add:
      return "add";
    case Op::mul:
      return "mul";
    case Op::exp2:
      return "exp2";
    case Op::square:
      return "square";
    default:
      return "";
  }
}

double eval_at(const std::vector<Node>& nodes, std::size_t& i, std::span<const double> x) {
  const Node& n = nodes[i++];
  switch (n.op) {
    case Op::constant:
      return n.value;
    case Op::variable:
      return x[n.param];
    case Op::add: {
      double a = eval_at(nodes, i, x);
      return a + eval_at(nodes, i, x);
    }
    case Op::mul: {
      double a = eval_at(nodes, i, x);
      return a * eval_at(nodes, i, x);
    }
    case Op::exp2:
      return std::exp2(eval_at(nodes, i, x));
    case Op::square: {
      double a = eval_at(nodes, i, x);
      return a * a;
    }
  }
  return 0;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string short_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string infix_at(const std::vector<Node>& nodes, std::size_t& i,
                     std::span<const std::string> names) {
  const Node& n = nodes[i++];
  switch (n.op) {
    case Op::constant:
      return short_number(n.value);
    case Op::variable:
      return names[n.param];
    case Op::add: {
      std::string a = infix_at(nodes, i, names);
      return "(" + a + " + " + infix_at(nodes, i, names) + ")";
    }
    case Op::mul: {
      std::string a = infix_at(nodes, i, names);
      return a + " * " + infix_at(nodes, i, names);
    }
    case Op::exp2:
      return "2^(" + infix_at(nodes, i, names) + ")";
    case Op::square:
      return "(" + infix_at(nodes, i, names) + ")^2";
  }
  return "";
}

}  // namespace

int arity(Op op) {
  switch (op) {
    case Op::add:
    case Op::mul:
      return 2;
    case Op::exp2:
    case Op::square:
      return 1;
    default:
      return 0;
  }
}

double Expr::evaluate(std::span<const double> x) const {
  std::size_t i = 0;
  return eval_at(nodes, i, x);
}

std::size_t Expr::subtree_end(std::size_t start) const {
  int open = 1;
  std::size_t i = start;
  while (open > 0) open += arity(nodes[i++].op) - 1;
  return i;
}

std::string Expr::to_string(std::span<const std::string> names) const {
  std::size_t i = 0;
  return infix_at(nodes, i, names);
}

std::string Expr::to_prefix(std::span<const std::string> names) const {
  std::string s;
  for (const auto& n : nodes) {
    if (!s.empty()) s += ' ';
    if (n.op == Op::constant)
      s += number(n.value);
    else if (n.op == Op::variable)
      s += names[n.param];
    else
      s += op_name(n.op);
  }
  return s;
}

Expr Expr::from_prefix(std::string_view text, std::span<const std::string> names) {
  Expr e;
  std::istringstream in{std::string(text)};
  std::string tok;
  int open = 1;
  while (in >> tok) {
    if (open == 0) throw std::invalid_argument("expression has trailing tokens: '" + tok + "'");
    Node n;
    bool known = false;
    for (Op op : {Op::add, Op::mul, Op::exp2, Op::square})
      if (tok == op_name(op)) {
        n.op = op;
        known = true;
      }
    for (std::size_t p = 0; !known && p < names.size(); ++p)
      if (tok == names[p]) {
        n.op = Op::variable;
        n.param = p;
        known = true;
      }
    if (!known) {
      auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), n.value);
      if (ec != std::errc() || end != tok.data() + tok.size())
        throw std::invalid_argument("unknown token in expression: '" + tok + "'");
      n.op = Op::constant;
    }
    open += arity(n.op) - 1;
    e.nodes.push_back(n);
  }
  if (open != 0)
    throw std::invalid_argument("expression is incomplete: '" + std::string(text) + "'");
  return e;
}

}  // namespace memwatch::model
