#include "memwatch/model/priors.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace memwatch::model {

namespace {

bool named(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

int stated_axes(const Priors& priors, const std::string& name) {
  const auto it = priors.axes.find(name);
  return priors.enabled && it != priors.axes.end() ? it->second : 0;
}

bool affine(const Priors& priors, const std::string& name) {
  const int axes = stated_axes(priors, name);
  return axes ? axes == 1 : named(priors.affine, name);
}

// Each stated parameter the runs vary appears at its top power, without a log, in some term.
bool carries_stated_axes(const Function& f, const std::vector<std::string>& params,
                         const std::vector<std::pair<double, double>>& ranges,
                         const Priors& priors) {
  const std::vector<double> required = required_powers(params, ranges, priors);
  for (std::size_t p = 0; p < required.size(); ++p) {
    if (required[p] == 0) continue;
    bool carried = false;
    for (const auto& feature : f.features) {
      const auto* t = std::get_if<CompoundTerm>(&feature);
      if (t == nullptr) return false;  // a GP tree's shape is its own, not the stated one
      for (const auto& s : t->factors)
        carried = carried || (s.param == p && s.exponent == required[p] && s.log_exponent == 0 &&
                              !s.exponential);
    }
    if (!carried) return false;
  }
  return true;
}

// A term family with non-negative coefficients, no log factor below 1 and no GP tree is
// non-decreasing and affine in the affine parameters by construction: no numbers needed.
bool monotone_by_construction(const Function& f,
                              const std::vector<std::pair<double, double>>& ranges) {
  for (std::size_t k = 0; k < f.features.size(); ++k) {
    const auto* t = std::get_if<CompoundTerm>(&f.features[k]);
    if (t == nullptr || f.coefficients[k] < 0) return false;
    for (const auto& s : t->factors)
      if (s.exponent < 0 || (s.log_exponent != 0 && ranges[s.param].first < 1)) return false;
  }
  return true;
}

}  // namespace

std::vector<bool> exponential_params(const std::vector<std::string>& params, const Priors& priors) {
  std::vector<bool> out;
  for (const auto& name : params)
    out.push_back(priors.enabled && !stated_axes(priors, name) && !affine(priors, name) &&
                  named(priors.exponential, name));
  return out;
}

std::vector<std::vector<double>> prior_exponents(const std::vector<std::string>& params,
                                                 const std::vector<double>& exponents,
                                                 const Priors& priors) {
  std::vector<std::vector<double>> out;
  for (const auto& name : params) {
    std::vector<double> allowed;
    if (const int axes = stated_axes(priors, name)) {
      for (int e = 0; e <= axes; ++e) allowed.push_back(e);
      out.push_back(std::move(allowed));
      continue;
    }
    for (double e : exponents) {
      if (priors.enabled && named(priors.affine, name) && e != 0 && e != 1) continue;
      if (priors.enabled && named(priors.integer_powers, name) && e != std::floor(e)) continue;
      allowed.push_back(e);
    }
    out.push_back(std::move(allowed));
  }
  return out;
}

std::vector<double> required_powers(const std::vector<std::string>& params,
                                    const std::vector<std::pair<double, double>>& ranges,
                                    const Priors& priors) {
  std::vector<double> required(params.size(), 0);
  for (std::size_t p = 0; p < params.size() && p < ranges.size(); ++p)
    if (ranges[p].second > ranges[p].first) required[p] = stated_axes(priors, params[p]);
  return required;
}

std::map<std::string, int> parse_axes(std::string_view text) {
  std::map<std::string, int> axes;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string_view count = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (eq == 0 || eq == std::string_view::npos || count.size() != 1 || count[0] < '1' ||
        count[0] > '4')
      throw std::invalid_argument("'" + std::string(item) +
                                  "': expected PARAMETER=AXES, the number of tensor axes the "
                                  "parameter spans, 1 to 4 (dim=3 for a cube's edge, batch=1)");
    const std::string name(item.substr(0, eq));
    if (!axes.try_emplace(name, count[0] - '0').second)
      throw std::invalid_argument("'" + name + "' is stated twice: one number of axes each");
  }
  return axes;
}

std::size_t batch_param(const std::vector<std::string>& params, const Priors& priors) {
  for (std::size_t p = 0; p < params.size(); ++p)
    if (named(priors.affine, params[p]) && affine(priors, params[p])) return p;
  return params.size();
}

std::size_t batch_one_apart(const std::vector<std::string>& params, std::string_view target,
                            const Priors& priors) {
  if (!priors.enabled || !priors.batch_one_regime || target.find("device") != std::string::npos)
    return params.size();
  return batch_param(params, priors);
}

bool respects_priors(const Function& f, const std::vector<std::string>& params,
                     const std::vector<std::pair<double, double>>& ranges, const Priors& priors) {
  if (!priors.enabled) return true;
  if (!carries_stated_axes(f, params, ranges, priors)) return false;
  bool structural = monotone_by_construction(f, ranges);
  for (const auto& feature : f.features)
    if (const auto* t = std::get_if<CompoundTerm>(&feature))
      for (const auto& s : t->factors)
        if (affine(priors, params[s.param]) &&
            (s.exponent != 1 || s.log_exponent != 0 || s.exponential))
          structural = false;
  if (structural) return true;
  const std::size_t n = ranges.size();
  auto high = [&](std::size_t p) { return ranges[p].second * std::max(1.0, priors.reach); };
  constexpr int kSteps = 48;
  std::vector<double> x(n);
  for (std::size_t p = 0; p < n; ++p) {
    const double lo = ranges[p].first, hi = high(p);
    if (!(hi > lo)) continue;
    // Every corner of the other parameters (low end, extended high end).
    for (std::size_t corner = 0; corner < (std::size_t{1} << (n - 1)); ++corner) {
      for (std::size_t q = 0, bit = 0; q < n; ++q)
        if (q != p) x[q] = (corner >> bit++) & 1 ? high(q) : ranges[q].first;
      double previous = -INFINITY;
      for (int s = 0; s <= kSteps; ++s) {
        const double t = static_cast<double>(s) / kSteps;
        // Geometric steps where the range is positive: memory parameters span decades.
        x[p] = lo > 0 ? lo * std::pow(hi / lo, t) : lo + (hi - lo) * t;
        const double v = f.evaluate(x);
        if (!std::isfinite(v) || v < previous - 1e-9 * std::abs(previous)) return false;
        previous = v;
      }
      if (affine(priors, params[p])) {
        x[p] = lo;
        const double a = f.evaluate(x);
        x[p] = hi;
        const double c = f.evaluate(x);
        x[p] = std::sqrt(std::max(lo, 1.0) * hi);
        const double mid = a + (c - a) * (x[p] - lo) / (hi - lo);
        if (std::abs(f.evaluate(x) - mid) > 1e-6 * std::max(std::abs(a), std::abs(c))) return false;
      }
    }
  }
  return true;
}

}  // namespace memwatch::model
