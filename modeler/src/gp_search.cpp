#include "memwatch/model/gp_search.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "press_state.hpp"

namespace memwatch::model {

namespace {

using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;

struct Individual {
  Expr tree;
  double fitness = INFINITY;
  bool tuned = false;
};

class Evolution {
 public:
  Evolution(const Dataset& d, const Hypothesis& base, const GpOptions& o)
      : data_(d), options_(o), rng_(o.seed), y_(targets(d)) {
    state_ = PressState::constant_only(y_);
    const MatrixXd design = design_matrix(d, base.function.features);
    for (Index k = 1; k < design.cols(); ++k)
      if (auto s = state_.extended(design.col(k).cwiseQuotient(y_))) state_ = std::move(*s);
    spread_limit_ = steepest_term_spread(d);
  }

  Expr run() {
    std::vector<Individual> population;
    for (std::size_t i = 0; i < options_.population; ++i) {
      // Ramped half-and-half: depths 1..4, full and grown trees alike.
      Individual ind{random_tree(1 + static_cast<int>(i % 4), /*full=*/i % 2 == 0)};
      ind.fitness = fitness(ind.tree);
      population.push_back(std::move(ind));
    }
    for (std::size_t g = 0; g < options_.generations; ++g) {
      std::sort(population.begin(), population.end(), by_fitness);
      for (std::size_t i = 0; i < std::min(options_.tuned_per_generation, population.size()); ++i)
        tune(population[i]);
      std::sort(population.begin(), population.end(), by_fitness);
      std::vector<Individual> next(population.begin(), population.begin() + 2);  // elitism
      while (next.size() < population.size()) {
        Expr child =
            chance(0.7) ? crossover(select(population), select(population)) : select(population);
        if (chance(0.4)) child = mutate(child);
        Individual ind{std::move(child)};
        ind.fitness = fitness(ind.tree);
        next.push_back(std::move(ind));
      }
      population = std::move(next);
    }
    for (auto& ind : population) tune(ind);
    return std::min_element(population.begin(), population.end(), by_fitness)->tree;
  }

 private:
  static bool by_fitness(const Individual& a, const Individual& b) { return a.fitness < b.fitness; }

  bool chance(double p) { return std::uniform_real_distribution<>(0, 1)(rng_) < p; }
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

  Node random_terminal() {
    if (chance(0.75)) return Node{Op::variable, 0, pick(data_.params.size())};
    return Node{Op::constant, std::uniform_real_distribution<>(0.5, 3)(rng_), 0};
  }

  void grow(Expr& e, int depth, bool full) {
    if (depth == 0 || (!full && chance(0.3))) {
      e.nodes.push_back(random_terminal());
      return;
    }
    static constexpr Op functions[] = {Op::add, Op::mul, Op::exp2, Op::square};
    const Op op = functions[pick(4)];
    e.nodes.push_back(Node{op, 0, 0});
    for (int a = 0; a < arity(op); ++a) grow(e, depth - 1, full);
  }

  Expr random_tree(int depth, bool full) {
    Expr e;
    grow(e, depth, full);
    return e;
  }

  VectorXd column(const Expr& tree) const {
    VectorXd c(y_.size());
    for (Index i = 0; i < y_.size(); ++i)
      c(i) = tree.evaluate(data_.rows[static_cast<std::size_t>(i)].x) / y_(i);
    return c;
  }

  // The spread (max / min) over the runs of the steepest term the term search may build: three
  // parameters at the cube. A tree steeper than that (2^dim) has a coefficient near zero, fits
  // the runs by a hair and explodes just past them: it is not a memory term.
  static double steepest_term_spread(const Dataset& d) {
    std::vector<double> spreads;
    for (std::size_t p = 0; p < d.params.size(); ++p) {
      double lo = INFINITY, hi = 0;
      for (const auto& r : d.rows)
        lo = std::min(lo, std::abs(r.x[p])), hi = std::max(hi, std::abs(r.x[p]));
      spreads.push_back(lo > 0 ? hi / lo : 1);
    }
    std::sort(spreads.begin(), spreads.end(), std::greater<>());
    double limit = 1;
    for (std::size_t i = 0; i < spreads.size() && i < 3; ++i) limit *= std::pow(spreads[i], 3);
    return std::max(limit, 16.0);
  }

  bool too_steep(const Expr& tree) const {
    double lo = INFINITY, hi = 0;
    for (const auto& r : data_.rows) {
      const double v = std::abs(tree.evaluate(r.x));
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    return !(hi <= spread_limit_ * lo);
  }

  // Leave-one-out MAPE with g added to the base model, with a light pressure toward small trees.
  double fitness(const Expr& tree) {
    const VectorXd c = column(tree);
    if (!c.allFinite() || too_steep(tree)) return INFINITY;
    const double s = state_.score(c, scratch_);
    return std::isfinite(s) ? s * (1 + 0.002 * static_cast<double>(tree.nodes.size())) : INFINITY;
  }

  // Training residual (weighted) after projecting out the base model and g.
  std::optional<VectorXd> residual(const Expr& tree) const {
    const VectorXd c = column(tree);
    if (!c.allFinite()) return std::nullopt;
    auto v = state_.direction(c);
    if (!v) return std::nullopt;
    return VectorXd(state_.residual - *v * v->dot(state_.residual));
  }

  // Levenberg-Marquardt on the tree's constants, the linear part re-solved at every step
  // (variable projection), so the constants only have to get the shape right.
  void tune(Individual& ind) {
    if (ind.tuned) return;
    ind.tuned = true;
    std::vector<std::size_t> slots;
    for (std::size_t i = 0; i < ind.tree.nodes.size(); ++i)
      if (ind.tree.nodes[i].op == Op::constant) slots.push_back(i);
    if (slots.empty()) return;
    Expr tree = ind.tree;
    auto r = residual(tree);
    if (!r) return;
    double cost = r->squaredNorm();
    double lambda = 1e-2;
    const auto p = static_cast<Index>(slots.size());
    for (std::size_t it = 0; it < options_.lm_iterations; ++it) {
      MatrixXd jac(r->size(), p);
      bool ok = true;
      for (Index k = 0; k < p && ok; ++k) {
        Expr moved = tree;
        double& c = moved.nodes[slots[static_cast<std::size_t>(k)]].value;
        const double step = 1e-6 * std::max(1.0, std::abs(c));
        c += step;
        auto rk = residual(moved);
        ok = rk.has_value();
        if (ok) jac.col(k) = (*rk - *r) / step;
      }
      if (!ok) break;
      const MatrixXd jtj = jac.transpose() * jac;
      const VectorXd grad = jac.transpose() * *r;
      bool improved = false;
      for (int attempt = 0; attempt < 6 && !improved; ++attempt) {
        MatrixXd damped = jtj;
        damped.diagonal() += lambda * (jtj.diagonal().array() + 1e-12).matrix();
        const VectorXd delta = damped.ldlt().solve(-grad);
        Expr trial = tree;
        for (Index k = 0; k < p; ++k)
          trial.nodes[slots[static_cast<std::size_t>(k)]].value += delta(k);
        auto rt = residual(trial);
        if (rt && rt->squaredNorm() < cost) {
          tree = std::move(trial);
          r = std::move(rt);
          cost = r->squaredNorm();
          lambda = std::max(lambda / 3, 1e-9);
          improved = true;
        } else {
          lambda *= 4;
        }
      }
      if (!improved) break;
    }
    const double f = fitness(tree);
    if (f < ind.fitness) {
      ind.tree = std::move(tree);
      ind.fitness = f;
    }
  }

  const Expr& select(const std::vector<Individual>& population) {
    const Individual* best = &population[pick(population.size())];
    for (std::size_t i = 1; i < options_.tournament; ++i) {
      const Individual& other = population[pick(population.size())];
      if (other.fitness < best->fitness) best = &other;
    }
    return best->tree;
  }

  Expr splice(const Expr& into, std::size_t at, const Expr& from, std::size_t from_at) const {
    Expr child;
    const std::size_t end = into.subtree_end(at), from_end = from.subtree_end(from_at);
    child.nodes.assign(into.nodes.begin(), into.nodes.begin() + static_cast<std::ptrdiff_t>(at));
    child.nodes.insert(child.nodes.end(), from.nodes.begin() + static_cast<std::ptrdiff_t>(from_at),
                       from.nodes.begin() + static_cast<std::ptrdiff_t>(from_end));
    child.nodes.insert(child.nodes.end(), into.nodes.begin() + static_cast<std::ptrdiff_t>(end),
                       into.nodes.end());
    return child.nodes.size() <= options_.max_nodes ? child : into;
  }

  Expr crossover(const Expr& a, const Expr& b) {
    return splice(a, pick(a.nodes.size()), b, pick(b.nodes.size()));
  }

  Expr mutate(const Expr& e) {
    const std::size_t at = pick(e.nodes.size());
    if (chance(0.5)) return splice(e, at, random_tree(2, /*full=*/false), 0);
    Expr m = e;
    Node& n = m.nodes[at];
    switch (n.op) {
      case Op::constant:
        n.value *= std::exp(std::normal_distribution<>(0, 0.3)(rng_));
        break;
      case Op::variable:
        n.param = pick(data_.params.size());
        break;
      case Op::add:
        n.op = Op::mul;
        break;
      case Op::mul:
        n.op = Op::add;
        break;
      case Op::exp2:
        n.op = Op::square;
        break;
      case Op::square:
        n.op = Op::exp2;
        break;
    }
    return m;
  }

  const Dataset& data_;
  const GpOptions& options_;
  std::mt19937_64 rng_;
  VectorXd y_;
  PressState state_;
  PressState::Scratch scratch_;
  double spread_limit_ = INFINITY;
};

}  // namespace

std::vector<Hypothesis> search_gp(const Dataset& d, const Hypothesis& base,
                                  const GpOptions& options) {
  if (d.params.empty() || d.rows.size() < 3) return {};
  const Expr best = Evolution(d, base, options).run();
  std::vector<Hypothesis> out;
  const auto& features = base.function.features;
  for (std::size_t drop = 0; drop <= features.size(); ++drop) {
    std::vector<Feature> f;
    for (std::size_t k = 0; k < features.size(); ++k)
      if (k != drop) f.push_back(features[k]);
    f.emplace_back(best);
    if (auto h = fit_hypothesis(d, std::move(f), options.nonnegative, /*with_loo_shifts=*/false,
                                options.loss))
      out.push_back(std::move(*h));
  }
  std::sort(out.begin(), out.end(),
            [](const Hypothesis& a, const Hypothesis& b) { return a.loo_mape() < b.loo_mape(); });
  return out;
}

}  // namespace memwatch::model
