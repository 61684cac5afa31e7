// Regime search: where one formula leaves error above noise, try every break between adjacent
// values of every parameter, score each by the term search alone on both sides (the cheap part
// of a fit), then fit the best break properly and keep it only when it clearly wins.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>

#include "memwatch/model/model.hpp"

namespace memwatch::model {

std::string Cut::to_string(const std::vector<std::string>& names) const {
  char value[32];
  std::snprintf(value, sizeof value, "%g", at);
  return names[param] + (above ? " > " : " <= ") + value;
}

namespace {

Dataset side_of(const Dataset& d, const Cut& c) {
  Dataset out;
  out.params = d.params;
  out.target = d.target;
  for (const auto& r : d.rows)
    if (c.contains(r.x)) out.rows.push_back(r);
  return out;
}

double mean_loo(const std::vector<SubModel>& parts) {
  double sum = 0;
  std::size_t runs = 0;
  for (const auto& p : parts) sum += p.loo_mape * static_cast<double>(p.runs), runs += p.runs;
  return runs ? sum / static_cast<double>(runs) : std::numeric_limits<double>::infinity();
}

// Breaks between adjacent distinct values of each parameter that leave `min_runs` on each side.
std::vector<Cut> candidate_cuts(const Dataset& d, std::size_t min_runs) {
  std::vector<Cut> cuts;
  for (std::size_t p = 0; p < d.params.size(); ++p) {
    std::set<double> values;
    for (const auto& r : d.rows) values.insert(r.x[p]);
    for (double v : values) {
      const Cut low{p, v, false};
      const auto below = static_cast<std::size_t>(std::count_if(
          d.rows.begin(), d.rows.end(), [&](const auto& r) { return low.contains(r.x); }));
      if (below >= min_runs && d.rows.size() - below >= min_runs) cuts.push_back(low);
    }
  }
  return cuts;
}

// What a cut is worth: the runs-weighted leave-one-out MAPE of its parts, and how many parts.
struct Score {
  double loo = std::numeric_limits<double>::infinity();
  std::size_t parts = 1;
};

// Within the simplicity tolerance the term search uses, fewer parts win.
bool better(const Score& a, const Score& b) {
  const double tie = std::max(0.05 * std::min(a.loo, b.loo), 1e-4);
  if (std::abs(a.loo - b.loo) <= tie && a.parts != b.parts) return a.parts < b.parts;
  return a.loo < b.loo;
}

// Screening by the term search alone (the cheap part of a fit), with the same rules the fit
// applies: a side is cut again only when it is above noise and the cut pays `split_gain`.
struct Screener {
  const FitOptions& options;
  TermSearchOptions terms;
  std::size_t min_runs;

  [[nodiscard]] double leaf(const Dataset& d) const {
    const auto ranked = search_terms(d, terms);
    return ranked.empty() ? std::numeric_limits<double>::infinity() : ranked.front().loo_mape();
  }

  [[nodiscard]] Score side(const Dataset& d, std::size_t depth) const {
    Score s{leaf(d), 1};
    if (depth <= 1 || s.loo <= options.split_above) return s;
    Score best;
    for (const Cut& c : candidate_cuts(d, min_runs))
      if (const Score cut = split(d, c, depth - 1); better(cut, best)) best = cut;
    return best.loo < options.split_gain * s.loo ? best : s;
  }

  [[nodiscard]] Score split(const Dataset& d, const Cut& low, std::size_t depth) const {
    Score total{0, 0};
    for (bool above : {false, true}) {
      const Dataset part = side_of(d, Cut{low.param, low.at, above});
      const Score s = side(part, depth);
      total.loo += s.loo * static_cast<double>(part.rows.size());
      total.parts += s.parts;
    }
    total.loo /= static_cast<double>(d.rows.size());
    return total;
  }
};

}  // namespace

std::vector<SubModel> fit_regimes(const Dataset& d, const FitOptions& options, std::size_t depth) {
  SubModel whole = fit_group(d, options);
  if (depth == 0 || whole.loo_mape <= options.split_above) return {std::move(whole)};
  Screener screener{options, shaped_terms(d.params, options), options.min_regime_runs};
  screener.terms.refit_limit = std::min<std::size_t>(screener.terms.refit_limit, 16);
  if (screener.min_runs == 0) screener.min_runs = 3 * (whole.function.features.size() + 1);
  const double target = options.split_gain * whole.loo_mape;
  // Every cut is screened one level deep; the few best are screened again with their sides
  // cut too, since one break often pays only once a second one is found.
  std::vector<std::pair<Score, Cut>> screened;
  for (const Cut& c : candidate_cuts(d, screener.min_runs))
    screened.emplace_back(screener.split(d, c, 1), c);
  std::sort(screened.begin(), screened.end(),
            [](const auto& a, const auto& b) { return a.first.loo < b.first.loo; });
  if (screened.size() > options.split_lookahead) screened.resize(options.split_lookahead);
  if (depth > 1)
    for (auto& [score, c] : screened) score = screener.split(d, c, depth);
  std::optional<Cut> best;
  Score best_score;
  for (const auto& [score, c] : screened)
    if (score.loo < target && better(score, best_score)) best = c, best_score = score;
  if (!best) return {std::move(whole)};
  std::vector<SubModel> parts;
  for (bool above : {false, true}) {
    const Cut cut{best->param, best->at, above};
    std::vector<SubModel> side;
    try {
      side = fit_regimes(side_of(d, cut), options, depth - 1);
    } catch (const FitError&) {
      return {std::move(whole)};
    }
    for (auto& p : side) {
      p.domain.insert(p.domain.begin(), cut);
      parts.push_back(std::move(p));
    }
  }
  if (mean_loo(parts) >= target) return {std::move(whole)};
  return parts;
}

}  // namespace memwatch::model
