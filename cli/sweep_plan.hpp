// Which point `memwatch sweep --auto` runs next. Before a model exists: the cheapest points that
// give every parameter three values, so each one's law can be told apart. With a model: among the
// points whose bound stays under the cap (1/8 of the target's prediction, or the largest run made
// where that is less: `sweep_auto.cpp`), the one that most narrows the prediction at the target
// for what it costs, with a pull toward the grid's corners no run has been near.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "memwatch/model/model.hpp"
#include "sweep_grid.hpp"

namespace memwatch::cli {

struct Measured {
  std::vector<double> values;  // one per axis
  std::optional<double> peak;  // the fitted figure; none for a run that failed
  double elapsed_s = 0;
};

struct Choice {
  Point point;
  std::string why;                 // for the progress line
  std::optional<double> expected;  // the model's upper bound there, when there is a model
};

struct Planner {
  std::vector<Axis> axes;
  std::vector<double> target;  // one value per axis, on the grid or not
  model::Priors priors;

  // The axes with more than one value: the model's parameters.
  [[nodiscard]] std::vector<std::size_t> varying() const;
  [[nodiscard]] std::vector<std::string> parameter_names() const;
  [[nodiscard]] std::vector<double> parameters_of(const std::vector<double>& values) const;
  [[nodiscard]] model::Point model_point(const std::vector<double>& values) const;
  [[nodiscard]] std::vector<double> values_of(const Point& p) const;

  // Every parameter has three measured values (or all its grid has).
  [[nodiscard]] bool covered(const std::vector<Measured>& runs) const;
  // Grid points not run yet. Batch 1 is left out when the target's batch is larger and the grid
  // has three other batches: on CPU it is a regime of its own (another convolution path), so it
  // tells nothing about the target's.
  [[nodiscard]] std::vector<Point> candidates(const std::vector<Measured>& runs) const;

  // The cheapest candidate that adds a value to the parameter with the fewest; the cheapest
  // candidate once every parameter has three. Cost without a model is the product of each
  // value over its axis's smallest: a trainer's memory grows with each of its parameters.
  [[nodiscard]] std::optional<Choice> first_runs(const std::vector<Measured>& runs) const;

  // The candidate with the best information for its cost among those whose upper bound is at
  // most `cap`; none when no candidate stays under it. `fitted` are the parameters of the runs
  // `m` was fitted on.
  [[nodiscard]] std::optional<Choice> informed(const model::Model& m,
                                               const std::vector<Measured>& runs,
                                               const std::vector<std::vector<double>>& fitted,
                                               double cap) const;
};

}  // namespace memwatch::cli
