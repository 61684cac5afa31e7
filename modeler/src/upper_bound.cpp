#include "memwatch/model/upper_bound.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace memwatch::model {

namespace {

std::size_t order_statistic(double level, std::size_t n) {
  return static_cast<std::size_t>(std::ceil(level * static_cast<double>(n + 1) - 1e-9));
}

// The constant's 1 and each feature's value at x: f(x) = features_at(f, x) · (constant,
// coefficients), and a leave-one-out fit's value is f(x) - features_at(f, x) · loo_shifts.col(i).
Eigen::VectorXd features_at(const Function& f, std::span<const double> x) {
  const auto m = static_cast<Eigen::Index>(f.features.size()) + 1;
  Eigen::VectorXd phi(m);
  phi(0) = 1;
  for (Eigen::Index k = 1; k < m; ++k)
    phi(k) = evaluate(f.features[static_cast<std::size_t>(k - 1)], x);
  return phi;
}

// x's peers (along the first parameter of the slices it has any along): their features and the
// full formula's value there, for every leave-one-out fit.
struct Peers {
  PeersAlong along;
  double at = 0;        // x's value along that parameter
  bool affine = false;  // the batch: misses along it follow a line
  std::vector<Eigen::VectorXd> features;
  std::vector<double> full;

  Peers(const Function& f, std::span<const double> x, const Slices& slices,
        std::size_t skip = SIZE_MAX)
      : along(slices.first_peers(f, x, skip)) {
    if (along.runs.empty()) return;
    affine = along.param == slices.batch;
    at = affine ? x[along.param] : 0;  // a carried miss is not placed along anything
    for (std::size_t j : along.runs) {
      features.push_back(features_at(f, slices.points[j]));
      full.push_back(f.evaluate(slices.points[j]));
    }
  }

  // The misses from the formula fitted without run `left_out` (of `loo`; the full formula
  // without it); the run left out is no peer.
  [[nodiscard]] std::vector<Miss> misses(const Slices& slices, const Bound* loo = nullptr,
                                         std::size_t left_out = SIZE_MAX) const {
    std::vector<Miss> misses;
    for (std::size_t k = 0; k < along.runs.size(); ++k) {
      const std::size_t run = along.runs[k];
      if (run == left_out) continue;
      double there = full[k];
      if (loo) there -= features[k].dot(loo->loo_shifts.col(static_cast<Eigen::Index>(left_out)));
      misses.push_back(
          {affine ? slices.points[run][along.param] : 0, slices.measured[run] - there, there});
    }
    return misses;
  }

  [[nodiscard]] Correction kind(const Slices& slices) const {
    return correction_kind(misses(slices), affine);
  }

  // The correction at x of that formula, whose value there is `predicted`.
  [[nodiscard]] double correction_at(const Slices& slices, double predicted,
                                     const Bound* loo = nullptr,
                                     std::size_t left_out = SIZE_MAX) const {
    return correction(misses(slices, loo, left_out), at, predicted, affine);
  }
};

// The corrected scores of the runs whose own peers correct them along the slices' parameter of
// `rank`, the `kind` way.
CorrectedScores corrected_scores(const Bound& b, const Hypothesis& h, const Dataset& d,
                                 const Slices& slices, std::size_t rank, Correction kind) {
  CorrectedScores c;
  std::vector<std::vector<double>> points;
  std::vector<double> errors, sizes;
  for (std::size_t i = 0; i < b.runs; ++i) {
    const Peers peers(h.function, d.rows[i].x, slices, /*skip=*/i);
    if (peers.along.rank != rank) continue;
    const std::vector<Miss> misses = peers.misses(slices, &b, i);
    if (correction_kind(misses, peers.affine) != kind) continue;
    const double y = d.rows[i].y;
    double loo_prediction = y / (1 + b.loo_ratios[i]);
    loo_prediction += correction(misses, peers.at, loo_prediction, peers.affine);
    c.runs.push_back(i);
    c.ratios.push_back((y - loo_prediction) / loo_prediction);
    points.push_back(d.rows[i].x);
    errors.push_back(std::abs(c.ratios.back()));
    sizes.push_back(y);
  }
  // How a program's misses grow with its peak shows best on all its runs: these are a subset
  // with the offsets of their configurations taken out (with the raw slopes, the C++ sweep's
  // corrected scores showed 0.61 where all its runs show 0.89, and read on their own they left
  // its bound covering 94.9% of held-out runs, against 96.2%).
  c.scale = make_local_scale(std::move(points), std::move(errors), std::move(sizes),
                             b.scale.size_power, b.scale.apart);
  for (std::size_t k = 0; k < c.runs.size(); ++k)
    c.run_scales.push_back(c.scale.at(c.scale.points[k], c.scale.sizes[k], /*skip=*/k));
  return c;
}

// The scores of the corrections along the slices' parameter of `rank`, by kind.
CorrectionScores scores_along(const Bound& b, const Hypothesis& h, const Dataset& d,
                              const Slices& slices, std::size_t rank) {
  return {corrected_scores(b, h, d, slices, rank, Correction::carried),
          corrected_scores(b, h, d, slices, rank, Correction::line)};
}

// The runs' leave-one-out ratios as the model predicts them: corrected where the scores of a
// correction cover the run, the formula's elsewhere.
std::vector<double> ratios_with(std::span<const double> loo_ratios,
                                std::span<const CorrectionScores> corrected) {
  std::vector<double> ratios(loo_ratios.begin(), loo_ratios.end());
  for (const CorrectionScores& scores : corrected)
    for (const CorrectedScores* c : {&scores.carried, &scores.line})
      for (std::size_t k = 0; k < c->runs.size(); ++k)
        if (c->runs[k] < ratios.size()) ratios[c->runs[k]] = c->ratios[k];
  return ratios;
}

std::vector<double> errors_with(std::span<const double> loo_ratios,
                                std::span<const CorrectionScores> corrected) {
  std::vector<double> errors = ratios_with(loo_ratios, corrected);
  for (double& e : errors) e = std::abs(e);
  return errors;
}

// What `after` saves over `before` in summed error.
double saved(const std::vector<double>& before, const std::vector<double>& after) {
  double sum = 0;
  for (std::size_t i = 0; i < before.size(); ++i) sum += before[i] - after[i];
  return sum;
}

// The jackknife+ value of `values` at the bound's level (the largest where too few).
double order_value(std::vector<double>& values, double level) {
  const std::size_t rank = std::min(order_statistic(level, values.size()), values.size());
  const auto k = static_cast<std::ptrdiff_t>(std::max<std::size_t>(rank, 1) - 1);
  std::nth_element(values.begin(), values.begin() + k, values.end());
  return values[static_cast<std::size_t>(k)];
}

}  // namespace

std::vector<double> predicted_ratios(const Bound& b) {
  return ratios_with(b.loo_ratios, b.corrected);
}

std::size_t Bound::runs_needed() const {
  std::size_t n = 1;
  while (order_statistic(requested_level, n) > n) ++n;
  return n;
}

std::string Bound::describe() const {
  char buf[200];
  if (enough_runs())
    std::snprintf(buf, sizeof buf, "jackknife+ on %zu leave-one-out fits, nominal level %.0f%%",
                  runs, level * 100);
  else
    std::snprintf(buf, sizeof buf,
                  "too few runs for a %.0f%% jackknife+ bound (%zu, needs %zu): largest "
                  "leave-one-out value, nominal level %.1f%%",
                  requested_level * 100, runs, runs_needed(), level * 100);
  return buf;
}

Bound make_bound(const Hypothesis& h, const Dataset& d, double level, std::size_t batch) {
  Bound b;
  b.requested_level = level;
  b.runs = static_cast<std::size_t>(h.fit.loo_residuals.size());
  b.loo_shifts = h.fit.loo_shifts;
  b.loo_ratios = loo_ratios(h.fit);
  b.scale = local_scale_of(d, b.loo_ratios, batch);
  for (std::size_t i = 0; i < b.runs; ++i)
    b.run_scales.push_back(b.scale.at(b.scale.points[i], d.rows[i].y, /*skip=*/i));
  b.rank = order_statistic(level, b.runs);
  if (b.rank <= b.runs) {
    b.method = "jackknife+";
    b.level = level;
  } else {
    b.method = "jackknife+ max";
    b.rank = b.runs;
    b.level = static_cast<double>(b.runs) / static_cast<double>(b.runs + 1);
  }
  return b;
}

Slices choose_corrections(Bound& b, const Hypothesis& h, const Dataset& d,
                          const std::vector<std::size_t>& candidates, std::size_t batch) {
  struct Trial {
    std::vector<std::size_t> along;
    std::vector<CorrectionScores> corrected;
    std::vector<double> errors;
  };
  Trial chosen{{}, {}, errors_with(b.loo_ratios, {})};
  // A parameter's scores depend on the parameters before it alone (a run takes the peers of the
  // first it has any along): a trial adds its own to the chosen ones.
  const auto adding = [&](std::size_t p) {
    Trial t = chosen;
    t.along.push_back(p);
    t.corrected.push_back(
        scores_along(b, h, d, make_slices(d, t.along, batch), t.along.size() - 1));
    t.errors = errors_with(b.loo_ratios, t.corrected);
    return t;
  };
  // The batch first: its peers are the configuration itself, along the one parameter memory is
  // affine in. Chosen by the runs' errors alone like the others, the C++ sweep's held-out runs
  // were missed by 2.81% on its random splits, against 2.66% with the batch first.
  if (std::find(candidates.begin(), candidates.end(), batch) != candidates.end())
    if (Trial t = adding(batch); saved(chosen.errors, t.errors) > 0) chosen = std::move(t);
  // Then the one other parameter that corrects the rest best. A third choice among the same runs
  // fitted their noise: chains of three and four parameters, held-out error 2.73% against 2.66%.
  std::optional<Trial> best;
  for (std::size_t p : candidates)
    if (p != batch)
      if (Trial t = adding(p); saved(best ? best->errors : chosen.errors, t.errors) > 0)
        best = std::move(t);
  if (best) chosen = std::move(*best);
  // Last, the batch-1 runs nearest in activations, for the batch-1 points no parameter's peers
  // correct: the C++ sweep's batch-1 runs were missed by 7.04% on its random splits without,
  // 5.28% with (slices.hpp).
  if (batch < d.params.size())
    if (Trial t = adding(kNearestActivations); saved(chosen.errors, t.errors) > 0)
      chosen = std::move(t);
  b.corrected = std::move(chosen.corrected);
  return make_slices(d, chosen.along, batch);
}

double corrected_value(const Function& f, std::span<const double> x, const Slices& slices) {
  const double full = f.evaluate(x);
  if (slices.empty()) return full;
  const Peers peers(f, x, slices);
  return full + peers.correction_at(slices, full);
}

double upper_bound(const Bound& b, const Function& f, std::span<const double> x,
                   const Slices& slices) {
  const Eigen::VectorXd phi = features_at(f, x);
  const double formula = f.evaluate(x);
  // corrected_value's, from the peers the bound needs anyway (finding them is a pass over the
  // runs, and over the formula at each batch-1 run for the runs nearest in activations).
  const Peers peers(f, x, slices);
  const double full = formula + peers.correction_at(slices, formula);
  const auto loo_formula = [&](std::size_t i) {
    return formula - phi.dot(b.loo_shifts.col(static_cast<Eigen::Index>(i)));
  };
  const Correction kind = peers.kind(slices);
  const CorrectedScores* c = nullptr;
  if (kind != Correction::none && peers.along.rank < b.corrected.size())
    c = kind == Correction::line ? &b.corrected[peers.along.rank].line
                                 : &b.corrected[peers.along.rank].carried;
  // A kind with too few runs of its own for the level is bounded as the formula is (wider).
  if (c && order_statistic(b.requested_level, c->runs.size()) <= c->runs.size()) {
    const CorrectedScores& scores = *c;
    const double here = scores.scale.at(x, full);
    std::vector<double> values;
    for (std::size_t k = 0; k < scores.runs.size(); ++k) {
      const std::size_t i = scores.runs[k];
      const double loo_prediction =
          loo_formula(i) + peers.correction_at(slices, loo_formula(i), &b, i);
      values.push_back(loo_prediction * (1 + here * scores.ratios[k] / scores.run_scales[k]));
    }
    return std::max(order_value(values, b.requested_level), full);
  }
  const bool scaled = !b.scale.empty() && b.run_scales.size() == b.loo_ratios.size();
  const double here = scaled ? b.scale.at(x, formula) : 1;
  std::vector<double> values(b.loo_ratios.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double ratio = scaled ? here * b.loo_ratios[i] / b.run_scales[i] : b.loo_ratios[i];
    values[i] = loo_formula(i) * (1 + ratio);
  }
  if (values.empty()) return full;
  const auto k = static_cast<std::ptrdiff_t>(std::clamp<std::size_t>(b.rank, 1, values.size()) - 1);
  std::nth_element(values.begin(), values.begin() + k, values.end());
  return std::max(values[static_cast<std::size_t>(k)], full);
}

}  // namespace memwatch::model
