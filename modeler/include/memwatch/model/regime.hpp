// Regimes: a program may change behaviour at some value of one parameter (LibTorch's CPU
// convolution takes a per-sample column-buffer path at batch 1 and oneDNN from batch 2), and one
// sum of products cannot follow both sides. A Cut names one side of such a break; a part of a
// Model holds the cuts that bound its domain.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace memwatch::model {

struct Cut {
  std::size_t param = 0;
  double at = 0;       // the largest value of the parameter on the low side of the break
  bool above = false;  // this side is x[param] > at; otherwise x[param] <= at

  [[nodiscard]] bool contains(std::span<const double> x) const {
    return above ? x[param] > at : x[param] <= at;
  }
  [[nodiscard]] std::string to_string(const std::vector<std::string>& names) const;
};

[[nodiscard]] inline bool inside(const std::vector<Cut>& domain, std::span<const double> x) {
  for (const auto& c : domain)
    if (!c.contains(x)) return false;
  return true;
}

}  // namespace memwatch::model
