#include "memwatch/model/function.hpp"

#include <cstdio>

namespace memwatch::model {

double evaluate(const Feature& f, std::span<const double> x) {
  return std::visit([&](const auto& t) { return t.evaluate(x); }, f);
}

std::string to_string(const Feature& f, std::span<const std::string> names) {
  return std::visit([&](const auto& t) { return t.to_string(names); }, f);
}

double Function::evaluate(std::span<const double> x) const {
  double v = constant;
  for (std::size_t k = 0; k < features.size(); ++k)
    v += coefficients[k] * model::evaluate(features[k], x);
  return v;
}

std::string Function::to_string(std::span<const std::string> names) const {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", constant);
  std::string s = buf;
  for (std::size_t k = 0; k < features.size(); ++k) {
    std::snprintf(buf, sizeof buf, "%.6g", coefficients[k]);
    s += coefficients[k] < 0 ? " - " : " + ";
    if (coefficients[k] < 0) std::snprintf(buf, sizeof buf, "%.6g", -coefficients[k]);
    s += buf;
    s += " * " + model::to_string(features[k], names);
  }
  return s;
}

}  // namespace memwatch::model
