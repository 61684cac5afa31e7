#include "memwatch/model/model_json.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

namespace memwatch::model {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;  // written in a readable order: schema first

ojson function_json(const Function& f, const std::vector<std::string>& names) {
  ojson terms = ojson::array();
  for (std::size_t k = 0; k < f.features.size(); ++k) {
    ojson t{{"coefficient", f.coefficients[k]}, {"term", to_string(f.features[k], names)}};
    if (const auto* c = std::get_if<CompoundTerm>(&f.features[k])) {
      ojson factors = ojson::array();
      for (const auto& s : c->factors) {
        // An exponential factor is written as base^x, without the keys of a power: a reader from
        // before exponential factors refuses the model rather than read levels^2 for 4^levels.
        if (s.exponential)
          factors.push_back({{"param", names[s.param]}, {"base", s.base()}});
        else
          factors.push_back({{"param", names[s.param]},
                             {"exponent", s.exponent},
                             {"log_exponent", s.log_exponent}});
      }
      t["factors"] = std::move(factors);
    } else {
      t["expr"] = std::get<Expr>(f.features[k]).to_prefix(names);
    }
    terms.push_back(std::move(t));
  }
  return {{"constant", f.constant}, {"terms", std::move(terms)}};
}

std::size_t param_index(const std::vector<std::string>& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  throw ModelJsonError("term names unknown parameter '" + name + "'");
}

Function function_from(const json& j, const std::vector<std::string>& names) {
  Function f;
  f.constant = j.at("constant").get<double>();
  for (const auto& t : j.at("terms")) {
    f.coefficients.push_back(t.at("coefficient").get<double>());
    if (t.contains("expr")) {
      try {
        f.features.emplace_back(Expr::from_prefix(t.at("expr").get<std::string>(), names));
      } catch (const std::invalid_argument& e) {
        throw ModelJsonError(e.what());
      }
      continue;
    }
    CompoundTerm c;
    for (const auto& s : t.at("factors")) {
      const std::size_t param = param_index(names, s.at("param").get<std::string>());
      if (!s.contains("base")) {
        c.factors.push_back(
            SimpleTerm{param, s.at("exponent").get<double>(), s.at("log_exponent").get<int>()});
        continue;
      }
      const double base = s.at("base").get<double>();
      if (!(std::isfinite(base) && base > 0))
        throw ModelJsonError("a factor's base must be a positive number, not " +
                             s.at("base").dump());
      c.factors.push_back(SimpleTerm::exponential_in(param, base));
    }
    f.features.emplace_back(std::move(c));
  }
  return f;
}

ojson scale_json(const LocalScale& scale, const std::vector<double>& run_scales) {
  ojson j{{"points", scale.points},
          {"errors", scale.errors},
          {"neighbours", scale.neighbours},
          {"floor", scale.floor},
          {"run_scales", run_scales}};
  if (scale.apart < SIZE_MAX) j["apart"] = scale.apart;
  if (scale.size_power > 0) {
    j["sizes"] = scale.sizes;
    j["size_power"] = scale.size_power;
  }
  return j;
}

// A local scale of `runs` runs over `params` parameters, and each run's scale without it.
void read_scale(const json& s, std::size_t runs, std::size_t params, LocalScale& scale,
                std::vector<double>& run_scales, const std::string& where) {
  scale.points = s.at("points").get<std::vector<std::vector<double>>>();
  scale.errors = s.at("errors").get<std::vector<double>>();
  scale.neighbours = s.at("neighbours").get<std::size_t>();
  scale.floor = s.at("floor").get<double>();
  run_scales = s.at("run_scales").get<std::vector<double>>();
  // A model saved before the batch's two sides were kept apart has none.
  if (s.contains("apart")) scale.apart = s.at("apart").get<std::size_t>();
  // One saved before errors were carried by size, or whose errors do not shrink with the
  // peak, has no sizes: errors compared as they are.
  if (s.contains("sizes")) {
    scale.sizes = s.at("sizes").get<std::vector<double>>();
    scale.size_power = s.at("size_power").get<double>();
    if (scale.sizes.size() != runs)
      throw ModelJsonError(where + ".sizes and its runs differ in length");
    if (!(scale.size_power >= 0 && scale.size_power <= 1))
      throw ModelJsonError(where + ".size_power must lie in 0..1");
  }
  if (scale.points.size() != runs || scale.errors.size() != runs || run_scales.size() != runs)
    throw ModelJsonError(where + " and its runs differ in length");
  for (const auto& x : scale.points)
    if (x.size() != params) throw ModelJsonError(where + ".points entry has the wrong length");
}

// The scores of one parameter's corrections, by kind (either may be absent), of `bound`'s runs.
CorrectionScores read_correction_scores(const json& kinds, const Bound& bound, std::size_t params,
                                        const std::string& where) {
  CorrectionScores scores;
  for (const auto& [name, c] : {std::pair{"carried", &scores.carried}, {"line", &scores.line}}) {
    if (!kinds.contains(name)) continue;
    const json& jc = kinds.at(name);
    const std::string at = where + "." + name;
    c->runs = jc.at("runs").get<std::vector<std::size_t>>();
    c->ratios = jc.at("ratios").get<std::vector<double>>();
    if (c->ratios.size() != c->runs.size())
      throw ModelJsonError(at + ".runs and " + at + ".ratios differ in length");
    for (std::size_t i : c->runs)
      if (i >= bound.loo_ratios.size())
        throw ModelJsonError(at + ".runs names a run the bound does not have");
    read_scale(jc.at("local_scale"), c->runs.size(), params, c->scale, c->run_scales,
               at + ".local_scale");
  }
  return scores;
}

// The training runs a part's slices hold.
void read_slice_runs(const json& s, std::size_t params, Slices& slices, const std::string& where) {
  slices.points = s.at("points").get<std::vector<std::vector<double>>>();
  slices.measured = s.at("measured").get<std::vector<double>>();
  if (slices.points.size() != slices.measured.size())
    throw ModelJsonError(where + ".points and " + where + ".measured differ in length");
  for (const auto& x : slices.points)
    if (x.size() != params) throw ModelJsonError(where + ".points entry has the wrong length");
}

}  // namespace

std::string to_json(const Model& m, int indent) {
  ojson parts = ojson::array();
  for (const auto& p : m.parts) {
    ojson j{
        {"labels", p.labels}, {"formula", p.function.to_string(m.params)}, {"search", p.search}};
    j.update(function_json(p.function, m.params));
    ojson domain = ojson::array();
    for (const auto& c : p.domain)
      domain.push_back({{"param", m.params[c.param]}, {"at", c.at}, {"above", c.above}});
    j["domain"] = std::move(domain);
    j["loo_mape"] = p.loo_mape;
    j["train_mape"] = p.train_mape;
    j["runs"] = p.runs;
    ojson range = ojson::object();
    for (std::size_t i = 0; i < p.range.size(); ++i)
      range[m.params[i]] = {p.range[i].first, p.range[i].second};
    j["range"] = std::move(range);
    ojson shifts = ojson::array();
    for (Eigen::Index i = 0; i < p.bound.loo_shifts.cols(); ++i) {
      const Eigen::VectorXd col = p.bound.loo_shifts.col(i);
      shifts.push_back(std::vector<double>(col.data(), col.data() + col.size()));
    }
    j["bound"] = {{"method", p.bound.method},
                  {"description", p.bound.describe()},
                  {"level", p.bound.level},
                  {"requested_level", p.bound.requested_level},
                  {"runs", p.bound.runs},
                  {"rank", p.bound.rank},
                  {"loo_ratios", p.bound.loo_ratios},
                  {"loo_shifts", std::move(shifts)}};
    if (!p.bound.scale.empty())
      j["bound"]["local_scale"] = scale_json(p.bound.scale, p.bound.run_scales);
    if (!p.bound.corrected.empty()) {
      ojson corrected = ojson::array();
      for (const CorrectionScores& scores : p.bound.corrected) {
        ojson kinds = ojson::object();
        for (const auto& [name, c] :
             {std::pair{"carried", &scores.carried}, {"line", &scores.line}})
          if (!c->runs.empty())
            kinds[name] = {{"runs", c->runs},
                           {"ratios", c->ratios},
                           {"local_scale", scale_json(c->scale, c->run_scales)}};
        corrected.push_back(std::move(kinds));
      }
      j["bound"]["corrected"] = std::move(corrected);
    }
    ojson checks = ojson::array();
    for (const ParamCheck& c : p.bound.extrapolation.params)
      checks.push_back({{"param", m.params[c.param]},
                        {"top", c.top},
                        {"miss_per_reach", c.miss_per_reach},
                        {"held_out", c.held_out},
                        {"held_before", c.held_before},
                        {"checked_reach", c.checked_reach},
                        {"affine", c.affine},
                        {"slope_shown", c.slope_shown}});
    j["bound"]["extrapolation"] = std::move(checks);
    ojson runner_ups = ojson::array();
    for (const auto& r : p.runner_ups) runner_ups.push_back(function_json(r, m.params));
    j["runner_ups"] = std::move(runner_ups);
    if (!p.slices.empty()) {
      ojson along = ojson::array();
      for (std::size_t a : p.slices.along)
        if (a != kNearestActivations) along.push_back(m.params[a]);
      j["slices"] = {{"along", std::move(along)},
                     {"points", p.slices.points},
                     {"measured", p.slices.measured}};
      if (p.slices.batch < m.params.size()) j["slices"]["batch"] = m.params[p.slices.batch];
      if (p.slices.along.back() == kNearestActivations)
        j["slices"]["nearest_in_activations"] = true;
    }
    parts.push_back(std::move(j));
  }
  ojson out{{"schema", model_schema},
            {"target", m.target},
            {"params", m.params},
            {"categories", m.categories},
            {"models", std::move(parts)}};
  if (!m.stated_axes.empty()) out["axes"] = m.stated_axes;
  return out.dump(indent);
}

Model model_from_json(std::string_view text) {
  try {
    const json j = json::parse(text);
    if (j.value("schema", "") != model_schema)
      throw ModelJsonError("not a memwatch model: schema is not \"" + std::string(model_schema) +
                           "\"");
    Model m;
    m.target = j.at("target").get<std::string>();
    m.params = j.at("params").get<std::vector<std::string>>();
    m.categories = j.at("categories").get<std::vector<std::string>>();
    if (j.contains("axes")) m.stated_axes = j.at("axes").get<std::map<std::string, int>>();
    for (const auto& jp : j.at("models")) {
      SubModel p;
      p.labels = jp.at("labels").get<std::map<std::string, std::string>>();
      p.function = function_from(jp, m.params);
      if (jp.contains("domain"))
        for (const auto& c : jp.at("domain"))
          p.domain.push_back(Cut{param_index(m.params, c.at("param").get<std::string>()),
                                 c.at("at").get<double>(), c.at("above").get<bool>()});
      p.search = jp.at("search").get<std::string>();
      p.loo_mape = jp.at("loo_mape").get<double>();
      p.train_mape = jp.at("train_mape").get<double>();
      p.runs = jp.at("runs").get<std::size_t>();
      for (const auto& name : m.params) {
        const auto& r = jp.at("range").at(name);
        p.range.emplace_back(r.at(0).get<double>(), r.at(1).get<double>());
      }
      const json& b = jp.at("bound");
      p.bound.method = b.at("method").get<std::string>();
      p.bound.level = b.at("level").get<double>();
      p.bound.requested_level = b.at("requested_level").get<double>();
      p.bound.runs = b.at("runs").get<std::size_t>();
      p.bound.rank = b.at("rank").get<std::size_t>();
      p.bound.loo_ratios = b.at("loo_ratios").get<std::vector<double>>();
      const auto& shifts = b.at("loo_shifts");
      const auto m_rows = static_cast<Eigen::Index>(p.function.features.size()) + 1;
      p.bound.loo_shifts.resize(m_rows, static_cast<Eigen::Index>(shifts.size()));
      for (std::size_t i = 0; i < shifts.size(); ++i) {
        const auto col = shifts[i].get<std::vector<double>>();
        if (static_cast<Eigen::Index>(col.size()) != m_rows)
          throw ModelJsonError("bound.loo_shifts entry has the wrong length");
        for (Eigen::Index k = 0; k < m_rows; ++k)
          p.bound.loo_shifts(k, static_cast<Eigen::Index>(i)) = col[static_cast<std::size_t>(k)];
      }
      if (p.bound.loo_ratios.size() != shifts.size())
        throw ModelJsonError("bound.loo_ratios and bound.loo_shifts differ in length");
      // Models saved before the local scale have none: one width everywhere, as they were.
      if (b.contains("local_scale"))
        read_scale(b.at("local_scale"), p.bound.loo_ratios.size(), m.params.size(), p.bound.scale,
                   p.bound.run_scales, "bound.local_scale");
      // Models saved before a second parameter could correct hold the batch's scores alone.
      if (b.contains("corrected"))
        for (const json& kinds : b.at("corrected"))
          p.bound.corrected.push_back(
              read_correction_scores(kinds, p.bound, m.params.size(), "bound.corrected"));
      else if (b.contains("carried") || b.contains("line"))
        p.bound.corrected.push_back(read_correction_scores(b, p.bound, m.params.size(), "bound"));
      // Models saved before the check have none: no widening past the runs, as they predicted.
      if (b.contains("extrapolation"))
        for (const json& e : b.at("extrapolation")) {
          ParamCheck c;
          c.param = param_index(m.params, e.at("param").get<std::string>());
          c.top = e.at("top").get<double>();
          c.miss_per_reach = e.at("miss_per_reach").get<double>();
          c.held_out = e.at("held_out").get<std::size_t>();
          c.held_before = e.value("held_before", std::size_t{0});  // absent before it existed
          c.checked_reach = e.at("checked_reach").get<double>();
          c.affine = e.at("affine").get<bool>();
          c.slope_shown = e.value("slope_shown", true);  // absent before it existed: vouched
          if (!(c.miss_per_reach >= 0) || !std::isfinite(c.miss_per_reach) ||
              !std::isfinite(c.top) || !(c.checked_reach >= 0))
            throw ModelJsonError(
                "bound.extrapolation: miss_per_reach and checked_reach must be finite numbers >= "
                "0, top a finite number");
          p.bound.extrapolation.params.push_back(c);
        }
      for (const auto& r : jp.at("runner_ups")) p.runner_ups.push_back(function_from(r, m.params));
      // Models saved before the slices have none: the formula alone, as they predicted; those
      // saved before a second parameter could correct have the batch's.
      if (jp.contains("slices")) {
        const json& s = jp.at("slices");
        for (const json& name : s.at("along"))
          p.slices.along.push_back(param_index(m.params, name.get<std::string>()));
        if (s.contains("batch"))
          p.slices.batch = param_index(m.params, s.at("batch").get<std::string>());
        if (s.value("nearest_in_activations", false)) {
          if (p.slices.batch >= m.params.size())
            throw ModelJsonError("slices.nearest_in_activations needs slices.batch");
          p.slices.along.push_back(kNearestActivations);
        }
        read_slice_runs(s, m.params.size(), p.slices, "slices");
      } else if (jp.contains("batch_slices")) {
        const json& s = jp.at("batch_slices");
        p.slices.batch = param_index(m.params, s.at("param").get<std::string>());
        p.slices.along = {p.slices.batch};
        read_slice_runs(s, m.params.size(), p.slices, "batch_slices");
      }
      if (p.slices.along.size() < p.bound.corrected.size())
        throw ModelJsonError("bound.corrected has more entries than slices.along");
      m.parts.push_back(std::move(p));
    }
    return m;
  } catch (const json::exception& e) {
    throw ModelJsonError(std::string("malformed model JSON: ") + e.what());
  }
}

}  // namespace memwatch::model
