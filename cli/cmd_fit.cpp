// `memwatch fit --input FILE [--target COLUMN] [--params a,b] [--json]`: fits a model of the
// target over the parameters and prints it, readable or as the JSON `predict` reads.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <span>
#include <sstream>
#include <string>

#include "args.hpp"
#include "memwatch/model/model.hpp"
#include "memwatch/model/model_json.hpp"
#include "memwatch/model/table_parse.hpp"
#include "model_io.hpp"

namespace memwatch::cli {

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Powers 0..j of log2(x) a factor may carry.
std::vector<int> log_powers(std::size_t j) {
  std::vector<int> powers(j + 1);
  for (std::size_t k = 0; k <= j; ++k) powers[k] = static_cast<int>(k);
  return powers;
}

constexpr Option kOptions[] = {
    {"input", "FILE",
     "the runs: CSV with a header (parameters, then the target), a sweep's file as it is, or "
     "JSON Lines {\"params\":{...},\"value\":N} (N may be a list of repetitions, as "
     "Extra-P writes them: their median is taken)"},
    {"target", "COLUMN",
     "the figure to model (default: device_peak_bytes where every run used a device, else "
     "host_peak_bytes when the header has it, else the last column)"},
    {"params", "a,b,...",
     "the parameters (default: every other column but a sweep's measurement columns; columns "
     "of words, fp32 or bf16, split the runs into separate models)"},
    {"json", "", "print the model as the JSON `memwatch predict --model` reads"},
    {"terms", "K", "terms in a formula besides the constant, 1 to 6 (default 4)"},
    {"exponents", "0,0.5,1,...",
     "the powers a factor may take (default 0,0.5,1,1.5,2,3; the priors narrow them for a "
     "batch and for spatial extents)"},
    {"log", "", "a factor may carry log2(x)"},
    {"log-power", "J", "a factor may carry log2(x) up to the power J, 1 to 3 (Extra-P's: 2)"},
    {"factors", "F", "parameters a term may multiply together, 1 to 6 (default 3)"},
    {"gp", "auto|always|never",
     "the genetic-programming search for forms outside the terms' family (default auto: where "
     "the terms miss by more than noise)"},
    {"level", "L", "the upper bound's nominal coverage, between 0 and 1 (default 0.95)"},
    {"regimes", "N",
     "cut the runs at up to N nested breaks where one formula cannot follow them, 0 to 3 "
     "(default 1; 0: never)"},
    {"formula-only", "",
     "predict by the formula alone, without correcting a point by the misses of the runs that "
     "differ from it in one parameter (its configuration's other batch sizes), or, at batch 1 "
     "without any, of the batch-1 runs nearest it in activations"},
    {"axes", "P=K,...",
     "P spans K axes of the trainer's tensors (a cube's edge 3, one side of a patch 1): memory "
     "is a polynomial of degree K in P that carries P^K (the activations)"},
};

constexpr Usage kUsage{
    "--input FILE [--target COLUMN] [--params a,b,...] [--json] [search options]",
    "Fits a formula of peak memory over the runs' parameters and prints it with its "
    "leave-one-out error and the upper bound's method. A parameter named levels or stages (a "
    "network whose channels double at each) may also enter as 2^levels and 4^levels (its "
    "weights), where the runs hold three values of it.",
    kOptions};

}  // namespace

std::string help_fit() {
  return usage_text("fit", kUsage);
}

int cmd_fit(std::span<char* const> argv) {
  const Args args(argv, kOptions);
  args.refuse_positional("the runs' file goes after --input");
  const std::string path = args.required("input");

  model::TableOptions table;
  table.target = args.value("target").value_or("");
  if (auto p = args.value("params")) table.params = split_list(*p);
  model::FitOptions options;
  if (auto k = args.value("terms")) options.terms.max_terms = parse_count(*k, "--terms", 1, 6);
  if (auto e = args.value("exponents")) {
    options.terms.exponents = {0};
    for (const auto& item : split_list(*e)) {
      const double v = parse_number(item, "--exponents");
      if (v != 0) options.terms.exponents.push_back(v);
    }
  }
  if (args.flag("log")) options.terms.log_exponents = {0, 1};
  if (auto j = args.value("log-power"))
    options.terms.log_exponents = log_powers(parse_count(*j, "--log-power", 1, 3));
  if (auto f = args.value("factors"))
    options.terms.max_factors = parse_count(*f, "--factors", 1, 6);
  if (args.flag("formula-only")) options.corrections = false;
  if (auto axes = args.value("axes")) options.priors.axes = axes_option(*axes);
  if (auto gp = args.value("gp")) {
    if (*gp == "always")
      options.gp_above = 0, options.gp_min_runs = 0;
    else if (*gp == "never")
      options.gp_above = INFINITY;
    else if (*gp != "auto")
      throw UsageError("--gp: expected auto, always or never");
  }
  if (auto depth = args.value("regimes"))
    options.split_depth = parse_count(*depth, "--regimes", 0, 3);
  if (auto level = args.value("level")) {
    options.bound_level = parse_number(*level, "--level");
    if (options.bound_level <= 0 || options.bound_level >= 1)
      throw UsageError("--level: expected a number between 0 and 1");
  }

  const std::string text = read_file(path);
  model::Dataset data;
  model::Model m;
  const auto start = std::chrono::steady_clock::now();
  try {
    data = model::parse_table(text, table);
    for (const auto& note : data.notes)
      std::fprintf(stderr, "memwatch fit: %s: %s\n", path.c_str(), note.c_str());
    m = model::fit(data, options);
  } catch (const model::ParseError& e) {
    throw std::runtime_error(path + ": " + e.what());
  } catch (const model::FitError& e) {
    throw std::runtime_error(path + (e.line ? ": line " + std::to_string(e.line) : std::string()) +
                             ": " + e.what());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (args.flag("json")) {
    std::puts(model::to_json(m).c_str());
  } else {
    std::printf("%s", m.describe().c_str());
    std::printf("fitted %zu runs of %s in %.3f s\n", data.rows.size(), path.c_str(), seconds);
  }
  return 0;
}

}  // namespace memwatch::cli
