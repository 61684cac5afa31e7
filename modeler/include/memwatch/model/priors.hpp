// What is known of a trainer's memory before any run, applied where a dozen runs cannot tell
// plausible forms from ones that fit the noise: activations grow affinely with the batch (a
// sample's tensors, once each), a volume's edge enters as a whole power (edge^3 voxels), and
// memory never shrinks when a parameter grows. The data may overrule the shape priors, but
// only by a clear margin.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memwatch/model/function.hpp"

namespace memwatch::model {

struct Priors {
  bool enabled = true;
  // Parameters whose exponent is 0 or 1 in every term (no batch^2, no batch^(1/2)).
  std::vector<std::string> affine{"batch", "batch_size", "batchsize", "bs", "micro_batch"};
  // Spatial extents and layer widths: whole exponents only (no dim^(3/2)). A tensor's elements
  // are a product of its axes: a volume's edge^3 voxels, a dense layer's width^2 weights (an
  // MLP's hidden^(3/2) from hidden 256-1024 was 7% low at 2048, its bound not covering). A
  // sequence's length keeps the default powers: whole ones left seq^3 x batch a credible
  // runner-up to a transformer's seq^2 x batch attention, and its bound at seq 512 from runs up
  // to 256 widened from 1.2% to 22%.
  std::vector<std::string> integer_powers{"dim",         "depth",   "height",     "width", "size",
                                          "edge",        "side",    "resolution", "res",   "hidden",
                                          "hidden_size", "d_model", "embed_dim",  "n_embd"};
  // A term counts a tensor's elements, the product of its axes: a trainer's largest tensors have
  // five (batch, channels and a volume's three), so no term's powers sum past them, with half a
  // power to spare for a channel count's 3/2 (between activations' 1 and weights' 2). Ten
  // transformer runs a planner chose near its floor fitted 4.1e-5·seq^3·batch·d_model^2:
  // 43 GiB where it measures 2.6, its bound +0.7%.
  double max_degree = 5.5;
  // Counts of levels or stages of a network whose channels double at each: its weights grow as
  // 4^levels (channels squared), which no power of levels follows past the runs. They may also
  // enter as 2^levels and 4^levels.
  std::vector<std::string> exponential{"levels", "stages"};
  // What the user states (`--axes dim=3,pd=1`): a parameter that spans that many axes of the
  // tensors (a cube's edge 3, one side of a patch 1, the batch 1). Memory is then a polynomial of
  // that degree in it whose top power is present: the activations grow with the voxels, edge^3,
  // so a dozen small runs cannot pick edge^2 for them. Overrules the name lists above.
  std::map<std::string, int> axes;
  // A model must not decrease along any parameter over [min, reach * max] of the runs: the grid
  // extended to where it will be asked (a batch size 8x the largest measured, say).
  double reach = 8;
  // That check, not the sign of each coefficient, is the prior: a term may be negative where the
  // whole formula stays non-decreasing (c + a·filters^(3/2)·(levels^(1/2) − 1.9): filters add
  // weights at a rate the levels set). Without the priors coefficients must be non-negative.
  bool signed_terms = true;
  std::size_t signed_runs = 20;  // nor on fewer runs than this
  // A search without the shape priors wins only when its leave-one-out MAPE is below this
  // fraction of the one with them (and theirs is above noise).
  double overwhelm = 0.25;
  // Nor on fewer runs than this: three runs at batch 1 cannot overwhelm anything.
  std::size_t overrule_runs = 20;
  // On host memory (CPU convolutions take another path at batch 1), batch 1 is offered as its
  // own regime; it is kept only where each part fits better than one formula does there.
  bool batch_one_regime = true;
};

// Per parameter, the exponents a term may give it under the priors, from `exponents`.
[[nodiscard]] std::vector<std::vector<double>> prior_exponents(
    const std::vector<std::string>& params, const std::vector<double>& exponents,
    const Priors& priors);

// Per parameter, whether it may also enter as 2^x and 4^x (`priors.exponential`).
[[nodiscard]] std::vector<bool> exponential_params(const std::vector<std::string>& params,
                                                   const Priors& priors);

// Per parameter, the power a formula must carry it to: the stated axes of the parameters the
// runs vary (`ranges`: training min, max); 0 where nothing is required.
[[nodiscard]] std::vector<double> required_powers(
    const std::vector<std::string>& params, const std::vector<std::pair<double, double>>& ranges,
    const Priors& priors);

// Stated axes from their text, "dim=3,pd=1" (each 1 to 4); throws std::invalid_argument saying
// what was expected.
[[nodiscard]] std::map<std::string, int> parse_axes(std::string_view text);

// The index of the first affine (batch-like) parameter, or params.size() when there is none.
[[nodiscard]] std::size_t batch_param(const std::vector<std::string>& params, const Priors& priors);

// The batch parameter where batch 1 is its own regime: on host memory (a `target` without
// "device" in its name; CPU convolutions take a per-sample path at batch 1), with the priors
// on. params.size() otherwise.
[[nodiscard]] std::size_t batch_one_apart(const std::vector<std::string>& params,
                                          std::string_view target, const Priors& priors);

// Whether `f` is affine in every affine parameter, carries each stated parameter to its top
// power (a sum of terms, no GP tree, where any is stated), and non-decreasing in every parameter
// over the runs' ranges extended to `priors.reach` times their maxima (checked numerically, at the
// corners of the other parameters).
[[nodiscard]] bool respects_priors(const Function& f, const std::vector<std::string>& params,
                                   const std::vector<std::pair<double, double>>& ranges,
                                   const Priors& priors);

}  // namespace memwatch::model
