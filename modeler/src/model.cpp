#include "memwatch/model/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace memwatch::model {

namespace {

bool same_features(const Function& a, const Function& b) {
  if (a.features.size() != b.features.size()) return false;
  for (const auto& f : a.features)
    if (std::find(b.features.begin(), b.features.end(), f) == b.features.end()) return false;
  return true;
}

std::string labels_text(const std::map<std::string, std::string>& labels) {
  std::string s;
  for (const auto& [k, v] : labels) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s;
}

std::vector<std::pair<double, double>> ranges_of(const Dataset& d) {
  std::vector<std::pair<double, double>> ranges;
  for (std::size_t p = 0; p < d.params.size(); ++p) {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& r : d.rows) lo = std::min(lo, r.x[p]), hi = std::max(hi, r.x[p]);
    ranges.emplace_back(lo, hi);
  }
  return ranges;
}

// The parameters peers may differ in: those the runs vary (`ranges`, per parameter), the batch
// first (it wins ties).
std::vector<std::size_t> varied_params(const std::vector<std::pair<double, double>>& ranges,
                                       std::size_t batch) {
  std::vector<std::size_t> varied;
  if (batch < ranges.size()) varied.push_back(batch);
  for (std::size_t p = 0; p < ranges.size(); ++p)
    if (p != batch && ranges[p].first < ranges[p].second) varied.push_back(p);
  return varied;
}

}  // namespace

TermSearchOptions shaped_terms(const Dataset& d, const FitOptions& options) {
  TermSearchOptions shaped = options.terms;
  shaped.loss = options.loss;
  if (options.priors.enabled) {
    shaped.param_exponents = prior_exponents(d.params, options.terms.exponents, options.priors);
    shaped.required_power = required_powers(d.params, ranges_of(d), options.priors);
    shaped.exponential = exponential_params(d.params, options.priors);
    shaped.max_degree = options.priors.max_degree;
    // At two values 4^x is a line in x, as any function is: the candidates would only add forms
    // for the search to choose among (the U-net sweeps, levels 4 and 5: the C++ sweep's
    // extrapolation 0.80% -> 1.15%, the GPU sweep's random bound coverage 95.0% -> 94.3%).
    for (std::size_t p = 0; p < shaped.exponential.size(); ++p) {
      std::set<double> values;
      for (const auto& r : d.rows) values.insert(r.x[p]);
      if (values.size() < 3) shaped.exponential[p] = false;
    }
    // The priors' monotonicity check stands in for the signs (respects_priors), on enough runs:
    // on a dozen, two large terms of opposite signs fit the noise.
    if (options.priors.signed_terms && d.rows.size() >= options.priors.signed_runs)
      shaped.nonnegative = false;
  }
  return shaped;
}

SubModel fit_group(const Dataset& d, const FitOptions& options) {
  if (d.rows.size() <= d.params.size())
    throw FitError(d.rows.empty() ? 0 : d.rows.back().line,
                   "only " + std::to_string(d.rows.size()) + " runs for " +
                       std::to_string(d.params.size()) +
                       " parameters: need more runs than parameters");
  SubModel part;
  part.range = ranges_of(d);
  part.search = "terms";
  const TermSearchOptions terms = shaped_terms(d, options);
  GpOptions gp_options = options.gp;
  gp_options.nonnegative = terms.nonnegative;
  gp_options.loss = terms.loss;
  std::vector<Hypothesis> ranked = search_terms(d, terms);
  Priors check = options.priors;
  bool overruled = false;
  if (options.priors.enabled && !ranked.empty() && ranked.front().loo_mape() > options.gp_above &&
      d.rows.size() >= options.priors.overrule_runs) {
    // The shape priors give way only to a clear margin: above noise, a free search that cuts
    // the error to a fraction (`overwhelm`) of theirs is evidence, not a fit to the jags. What
    // the user stated stays.
    TermSearchOptions unshaped = terms;
    Priors stated_only;
    stated_only.affine.clear();
    stated_only.integer_powers.clear();
    unshaped.exponential.clear();
    unshaped.max_degree = 0;
    stated_only.axes = options.priors.axes;
    unshaped.param_exponents = prior_exponents(d.params, options.terms.exponents, stated_only);
    auto free = search_terms(d, unshaped);
    if (!free.empty() &&
        free.front().loo_mape() < options.priors.overwhelm * ranked.front().loo_mape()) {
      ranked = std::move(free);
      check.affine.clear();
      overruled = true;
    }
  }
  auto implausible = [&](const Hypothesis& h) {
    return !respects_priors(h.function, d.params, part.range, check);
  };
  // Runner-ups widen the bound, so an implausible one must go too, not only the front.
  const bool front_implausible = !ranked.empty() && implausible(ranked.front());
  std::erase_if(ranked, implausible);
  if (front_implausible) prefer_simple(ranked, terms);
  if (ranked.empty()) throw FitError(0, "no model fits these runs");
  if (ranked.front().loo_mape() > options.gp_above && d.rows.size() >= options.gp_min_runs) {
    auto gp = search_gp(d, ranked.front(), gp_options);
    std::erase_if(gp, implausible);
    const Function term_best = ranked.front().function;
    ranked.insert(ranked.end(), std::make_move_iterator(gp.begin()),
                  std::make_move_iterator(gp.end()));
    std::stable_sort(ranked.begin(), ranked.end(), [](const Hypothesis& a, const Hypothesis& b) {
      return a.loo_mape() < b.loo_mape();
    });
    prefer_simple(ranked, terms);
    if (!same_features(ranked.front().function, term_best)) part.search += "+gp";
  }
  if (overruled) part.search += " (priors overruled)";
  // The search fitted these features by the same loss; the refit adds the coefficient shifts
  // the bound needs, and falls back to least squares where Huber's loss finds no fit.
  auto final_fit = fit_hypothesis(d, ranked.front().function.features, terms.nonnegative,
                                  /*with_loo_shifts=*/true, options.loss);
  if (!final_fit && options.loss != Loss::squared)
    final_fit = fit_hypothesis(d, ranked.front().function.features, terms.nonnegative,
                               /*with_loo_shifts=*/true);
  const Hypothesis& best = final_fit ? *final_fit : ranked.front();
  part.function = best.function;
  part.loo_mape = best.loo_mape();
  part.train_mape = best.train_mape();
  part.runs = d.rows.size();
  const std::size_t batch =
      options.priors.enabled ? batch_param(d.params, options.priors) : d.params.size();
  const std::size_t one = batch_one_apart(d.params, d.target, options.priors);
  const std::size_t apart = one < d.params.size() ? one : SIZE_MAX;
  part.bound = final_fit ? make_bound(*final_fit, d, options.bound_level, apart) : Bound{};
  if (final_fit && options.corrections && options.priors.enabled)
    part.slices =
        choose_corrections(part.bound, *final_fit, d, varied_params(part.range, batch), batch);
  if (final_fit)
    part.bound.extrapolation = check_extrapolation(
        d, part.function, {.nonnegative = terms.nonnegative, .loss = options.loss, .apart = apart},
        part.loo_mape);
  if (options.priors.enabled && !overruled)
    for (ParamCheck& c : part.bound.extrapolation.params) c.affine = c.param == batch;
  // Runner-ups: credible alternatives (within twice the best error, or half a percent) with
  // different terms; where they disagree off the data, the data could not tell them apart.
  const double credible = std::max(2 * part.loo_mape, part.loo_mape + 0.005);
  for (std::size_t i = 1; i < ranked.size() && part.runner_ups.size() < options.runner_ups; ++i) {
    if (ranked[i].loo_mape() > credible || same_features(ranked[i].function, part.function))
      continue;
    bool duplicate = false;
    for (const auto& r : part.runner_ups)
      duplicate = duplicate || same_features(r, ranked[i].function);
    if (!duplicate) part.runner_ups.push_back(ranked[i].function);
  }
  return part;
}

Model fit(const Dataset& d, const FitOptions& given) {
  // Where repetitions show the measurements noisier than the thresholds assume, error up to that
  // noise is no reason for a GP tree or a regime.
  FitOptions options = given;
  for (const auto& [name, axes] : options.priors.axes)
    if (std::find(d.params.begin(), d.params.end(), name) == d.params.end()) {
      std::string params;
      for (const auto& p : d.params) params += (params.empty() ? "" : ", ") + p;
      throw FitError(0, "the axes stated for '" + name +
                            "' name no numeric parameter of these runs (they have: " + params +
                            ")");
    }
  const double noise = repetition_noise(d);
  options.gp_above = std::max(options.gp_above, noise);
  options.split_above = std::max(options.split_above, noise);
  Model m;
  m.target = d.target;
  m.params = d.params;
  m.categories = d.categories;
  m.stated_axes = options.priors.axes;
  for (auto& g : split_by_category(d)) {
    std::vector<SubModel> parts;
    try {
      parts = fit_regimes(g.data, options, options.split_depth);
    } catch (const FitError& e) {
      if (g.labels.empty()) throw;
      throw FitError(e.line, labels_text(g.labels) + ": " + e.what());
    }
    for (auto& part : parts) {
      part.labels = g.labels;
      m.parts.push_back(std::move(part));
    }
  }
  if (m.parts.empty()) throw FitError(0, "no runs to fit");
  return m;
}

std::vector<double> Model::values_of(const Point& p) const {
  std::vector<double> x;
  for (const auto& name : params) {
    auto it = p.values.find(name);
    if (it == p.values.end()) throw std::invalid_argument("missing parameter '" + name + "'");
    x.push_back(it->second);
  }
  for (const auto& [k, v] : p.values)
    if (std::find(params.begin(), params.end(), k) == params.end())
      throw std::invalid_argument("unknown parameter '" + k + "'");
  return x;
}

const SubModel& Model::part_for(const Point& p) const {
  for (const auto& c : categories)
    if (!p.labels.contains(c))
      throw std::invalid_argument("missing categorical parameter '" + c + "'");
  for (const auto& [k, v] : p.labels)
    if (std::find(categories.begin(), categories.end(), k) == categories.end())
      throw std::invalid_argument("unknown categorical parameter '" + k + "'");
  const std::vector<double> x = values_of(p);
  for (const auto& part : parts)
    if (part.labels == p.labels && inside(part.domain, x)) return part;
  std::set<std::string> groups;
  for (const auto& part : parts) groups.insert(labels_text(part.labels));
  std::string have;
  for (const auto& g : groups) have += (have.empty() ? "" : "; ") + g;
  throw std::invalid_argument("no model for " + labels_text(p.labels) + " (models exist for " +
                              have + ")");
}

Prediction Model::predict(const SubModel& part, std::span<const double> x) const {
  Prediction out;
  const double formula = part.function.evaluate(x);
  out.value = corrected_value(part.function, x, part.slices);
  out.upper = part.bound.runs ? upper_bound(part.bound, part.function, x, part.slices) : out.value;
  for (std::size_t p = 0; p < x.size() && p < part.range.size(); ++p)
    if (x[p] < part.range[p].first || x[p] > part.range[p].second) out.extrapolating = true;
  if (out.extrapolating) {
    // Jackknife+ says nothing off the data; the runner-ups' disagreement is what the data
    // could not settle, so the bound takes the highest of them on top.
    double widest = formula;
    for (const auto& r : part.runner_ups) widest = std::max(widest, r.evaluate(x));
    out.upper += widest - formula;
  }
  const PastTheRuns past = part.bound.extrapolation.at(part.function, x);
  out.upper += out.value * past.widening;
  out.reach_ratio = std::exp(past.reach);
  out.vouched = past.vouched;
  return out;
}

std::string extrapolation_note(const Prediction& p) {
  if (!p.extrapolating && p.reach_ratio <= 1) return "";
  std::string note = "extrapolating: outside the training range";
  if (p.reach_ratio > 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", %.3gx the runs' memory along it", p.reach_ratio);
    note += buf;
  }
  // Also where the formula does not grow there at all (a parameter the runs never varied).
  if (!p.vouched) note += ", further than the runs check: the bound is not vouched for";
  return note;
}

Prediction Model::predict(const Point& p) const {
  return predict(part_for(p), values_of(p));
}

std::string Model::describe() const {
  std::string s;
  char buf[256];
  if (!stated_axes.empty()) {
    s += "stated axes:";
    for (const auto& [name, axes] : stated_axes) s += " " + name + "=" + std::to_string(axes);
    s += " (each a polynomial of that degree that carries its top power)\n";
  }
  for (const auto& part : parts) {
    std::string where = labels_text(part.labels);
    for (const auto& c : part.domain) where += (where.empty() ? "" : ", ") + c.to_string(params);
    if (!where.empty()) s += "[" + where + "]\n";
    s += target + " = " + part.function.to_string(params) + "\n";
    std::snprintf(buf, sizeof buf, "  constant      %.9g\n", part.function.constant);
    s += buf;
    for (std::size_t k = 0; k < part.function.features.size(); ++k) {
      std::snprintf(buf, sizeof buf, "  coefficient   %.9g  * %s\n", part.function.coefficients[k],
                    to_string(part.function.features[k], params).c_str());
      s += buf;
    }
    std::snprintf(buf, sizeof buf,
                  "  runs          %zu\n  search        %s\n  loo MAPE      %.4f%%\n"
                  "  train MAPE    %.4f%%\n",
                  part.runs, part.search.c_str(), part.loo_mape * 100, part.train_mape * 100);
    s += buf;
    s += "  bound         " + part.bound.describe() + "\n";
    if (part.bound.scale.size_power > 0) {
      std::snprintf(buf, sizeof buf,
                    "                errors of nearby runs carried by size: |error| ~ peak^-%.2f\n",
                    part.bound.scale.size_power);
      s += buf;
    }
    s += "                off the training range, widened by " +
         std::to_string(part.runner_ups.size()) + " runner-up model(s)\n";
    for (const ParamCheck& c : part.bound.extrapolation.params) {
      if (c.held_out > 0) {
        char before[80] = "";
        if (c.held_before > 0)
          std::snprintf(before, sizeof before,
                        ", or of %zu a step below predicted without both, if lower", c.held_before);
        std::snprintf(buf, sizeof buf,
                      "                past %s = %g, widened by %.2f%% per e-fold (the upper "
                      "quartile of %zu run(s) at %g predicted without them%s)\n",
                      params[c.param].c_str(), c.top, c.miss_per_reach * 100, c.held_out, c.top,
                      before);
      } else if (c.affine)
        std::snprintf(buf, sizeof buf,
                      "                past %s = %g: not checked (fewer than three values, too few "
                      "runs below it, or none %.0f%% past them): the largest rate\n",
                      params[c.param].c_str(), c.top, std::expm1(kMinReach) * 100);
      else
        std::snprintf(buf, sizeof buf,
                      "                past %s = %g: not checked (fewer than three values, too few "
                      "runs below it, or none %.0f%% past them): the largest rate, at least "
                      "%.2f%% per e-fold (the leave-one-out MAPE)\n",
                      params[c.param].c_str(), c.top, std::expm1(kMinReach) * 100,
                      c.miss_per_reach * 100);
      s += buf;
    }
    if (!part.slices.empty()) {
      s += "  corrected     by the misses of ";
      for (std::size_t k = 0; k < part.slices.along.size(); ++k) {
        const std::size_t p = part.slices.along[k];
        s += k ? ", else " : "";
        if (p == kNearestActivations)
          s += std::string(k ? "of " : "") +
               "the batch-1 runs nearest a point in activations (batch x the formula's slope)";
        else
          s += (k ? "in " : "the runs that differ from a point in ") + params[p] + " alone";
      }
      s += "\n";
    }
  }
  return s;
}

}  // namespace memwatch::model
