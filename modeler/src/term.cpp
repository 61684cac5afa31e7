#include "memwatch/model/term.hpp"

#include <cmath>
#include <cstdio>

namespace memwatch::model {

SimpleTerm SimpleTerm::exponential_in(std::size_t param, double base) {
  return {param, std::log2(base), 0, /*exponential=*/true};
}

double SimpleTerm::base() const {
  return std::exp2(exponent);
}

double SimpleTerm::evaluate(std::span<const double> x) const {
  const double v = x[param];
  if (exponential) return std::exp2(exponent * v);
  double r = exponent == 1 ? v : std::pow(v, exponent);
  if (log_exponent != 0) r *= std::pow(std::log2(v), log_exponent);
  return r;
}

double CompoundTerm::evaluate(std::span<const double> x) const {
  double r = 1;
  for (const auto& f : factors) r *= f.evaluate(x);
  return r;
}

std::string format_exponent(double e) {
  for (int den : {1, 2, 3, 4}) {
    const double num = e * den;
    if (std::abs(num - std::round(num)) < 1e-9) {
      const long n = std::lround(num);
      return den == 1 ? std::to_string(n) : std::to_string(n) + "/" + std::to_string(den);
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", e);
  return buf;
}

std::string CompoundTerm::to_string(std::span<const std::string> names) const {
  if (factors.empty()) return "1";
  std::string s;
  for (const auto& f : factors) {
    if (!s.empty()) s += " * ";
    const std::string& name = names[f.param];
    if (f.exponential) {
      s += format_exponent(f.base()) + "^" + name;
      continue;
    }
    if (f.exponent != 0) {
      s += name;
      if (f.exponent != 1) {
        const std::string e = format_exponent(f.exponent);
        s += e.find('/') == std::string::npos ? "^" + e : "^(" + e + ")";
      }
    }
    if (f.log_exponent != 0) {
      if (f.exponent != 0) s += " * ";
      s += "log2(" + name + ")";
      if (f.log_exponent != 1) s += "^" + std::to_string(f.log_exponent);
    }
  }
  return s;
}

}  // namespace memwatch::model
