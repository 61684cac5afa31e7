#include "memwatch/model/largest_fitting.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace memwatch::model {

Fitting largest_fitting(const Model& m, Point p, const std::string& vary, double capacity,
                        const FitSearch& search) {
  if (!(search.step > 0) || !(capacity > 0))
    throw std::invalid_argument("the step and the capacity must be positive");
  if (std::find(m.params.begin(), m.params.end(), vary) == m.params.end())
    throw std::invalid_argument("unknown parameter '" + vary + "'");
  const double last = std::floor(search.limit / search.step);
  // Steps, not values, are searched: k * step is exact where a running sum would drift.
  auto at = [&](double k) {
    p.values[vary] = k * search.step;
    return m.predict(p);
  };
  auto fits = [&](double k) { return at(k).upper <= capacity; };
  if (!fits(1)) return {};
  // Doubling to the first step that does not fit, then bisection between it and the last one
  // that did.
  double good = 1, bad = 0;
  for (double k = 2; k <= last; k *= 2) {
    if (!fits(k)) {
      bad = k;
      break;
    }
    good = k;
  }
  if (bad == 0 && good < last) {
    if (fits(last))
      good = last;
    else
      bad = last;
  }
  while (bad - good > 1) {
    const double mid = std::floor((good + bad) / 2);
    (fits(mid) ? good : bad) = mid;
  }
  if (good <= search.exhaustive_steps)
    for (double k = 2; k < good; ++k)
      if (!fits(k)) {
        good = k - 1;
        break;
      }
  return {good * search.step, at(good)};
}

}  // namespace memwatch::model
