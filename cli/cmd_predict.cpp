// `memwatch predict --model MODEL.json (--input FILE | name=value...) [--json]`: the model's
// prediction and upper bound at each point; `memwatch max --model MODEL.json --vary P --capacity
// SIZE name=value...`: the largest value of P whose upper bound fits. Both answer from a model
// file, offline; with --workload they ask the daemon instead.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "args.hpp"
#include "memwatch/model/largest_fitting.hpp"
#include "memwatch/model/model.hpp"
#include "memwatch/model/model_json.hpp"
#include "memwatch/model/table_parse.hpp"
#include "memwatch/protocol/parse.hpp"
#include "model_io.hpp"
#include "query_client.hpp"

namespace memwatch::cli {

namespace {

constexpr Option kModelFile{"model", "MODEL.json",
                            "answer offline from this model file (`memwatch fit --json`)"};
constexpr Option kWorkload{"workload", "W", "ask the daemon instead, from its latest model of W"};
constexpr Option kTarget{"target", "T",
                         "with --workload: the figure, host_peak_bytes or device_peak_bytes"};

// Each command's options, those that read a model file first and those that ask the daemon
// last; --json, shared, between them.
constexpr Option kPredictOptions[] = {
    kModelFile,
    {"input", "FILE",
     "the points: CSV whose header names the model's parameters (other columns are ignored), or "
     "JSON Lines with a \"params\" object each"},
    {"json", "",
     "print [{\"prediction\":..,\"upper\":..}, ...] (with --workload: the daemon's answer)"},
    kWorkload,
    kTarget,
    kQueryOption,
    kCurveKeysOption,
};
constexpr auto kPredictFromFile = std::span(kPredictOptions).first(3);
constexpr auto kPredictFromDaemon = std::span(kPredictOptions).subspan(2);

constexpr Option kMaxOptions[] = {
    kModelFile,
    {"step", "S", "the answer is a multiple of S (default 1)"},
    {"vary", "P", "the parameter to find the largest value of"},
    {"capacity", "SIZE", "the memory the bound must fit in: 24GiB, 512MiB, or bytes"},
    {"json", "", "print the answer as JSON (with --workload: the daemon's answer)"},
    kWorkload,
    kTarget,
    kQueryOption,
    kCurveKeysOption,
};
constexpr auto kMaxFromFile = std::span(kMaxOptions).first(5);
constexpr auto kMaxFromDaemon = std::span(kMaxOptions).subspan(2);

bool asks_daemon(std::span<char* const> argv) {
  for (const char* word : argv)
    if (std::string_view(word) == "--workload" || std::string_view(word).starts_with("--workload="))
      return true;
  return false;
}

model::Model read_model(const std::string& path) {
  try {
    return model::model_from_json(read_file(path));
  } catch (const model::ModelJsonError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

std::string note_text(const model::Prediction& p) {
  const std::string note = model::extrapolation_note(p);
  return note.empty() ? "" : "  (" + note + ")";
}

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / 1073741824.0);
  return text;
}

model::Point point_from_words(const std::vector<std::string>& words, const model::Model& m) {
  model::Point p;
  for (const auto& w : words) {
    const auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("expected name=value, got '" + w + "'");
    const std::string name = w.substr(0, eq), value = w.substr(eq + 1);
    if (std::find(m.categories.begin(), m.categories.end(), name) != m.categories.end())
      p.labels[name] = value;
    else
      p.values[name] = parse_number(value, name);
  }
  return p;
}

}  // namespace

int cmd_predict_daemon(std::span<char* const> argv, std::span<const Option> options);
int cmd_max_daemon(std::span<char* const> argv, std::span<const Option> options);

std::string help_predict() {
  return usage_text("predict",
                    {"--model MODEL.json (--input FILE | NAME=VALUE...) [--json]\n"
                     "--workload W [--target T] NAME=VALUE... [--json]",
                     "The peak a model predicts at each point and its upper bound, and whether the "
                     "point lies past the runs. NAME=VALUE words give one point: every parameter "
                     "of the model, categorical ones (precision=bf16) too.",
                     kPredictOptions});
}

std::string help_max() {
  return usage_text(
      "max", {"--model MODEL.json --vary P --capacity SIZE [--step S] NAME=VALUE... [--json]\n"
              "--workload W --vary P --capacity SIZE [--target T] NAME=VALUE... [--json]",
              "The largest value of P (a multiple of S) whose upper bound, and every smaller "
              "one's, fits SIZE; the other parameters as the NAME=VALUE words give them.",
              kMaxOptions});
}

int cmd_predict(std::span<char* const> argv) {
  // With --workload the daemon answers from its latest model; with --model, a model file does.
  if (asks_daemon(argv)) return cmd_predict_daemon(argv, kPredictFromDaemon);
  const Args args(argv, kPredictFromFile);
  const std::string model_path = args.required("model");
  const auto input = args.value("input");
  if (input.has_value() == !args.positional().empty())
    throw UsageError("give either --input FILE or name=value words");

  const model::Model m = read_model(model_path);
  std::vector<model::Point> points;
  if (input) {
    try {
      points = model::parse_points(read_file(*input), m.params, m.categories);
    } catch (const model::ParseError& e) {
      throw std::runtime_error(*input + ": " + e.what());
    }
  } else {
    points.push_back(point_from_words(args.positional(), m));
  }

  // ordered_json keeps the documented key order: prediction, upper, extrapolating.
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < points.size(); ++i) {
    model::Prediction pred;
    try {
      pred = m.predict(points[i]);
    } catch (const std::invalid_argument& e) {
      if (!input) throw UsageError(e.what());
      throw std::runtime_error(*input + ": point " + std::to_string(i + 1) + ": " + e.what());
    }
    if (args.flag("json")) {
      nlohmann::ordered_json one = {{"prediction", pred.value}, {"upper", pred.upper}};
      model::put_extrapolation(one, pred);
      out.push_back(std::move(one));
    } else {
      std::printf("prediction %.6g  upper %.6g%s\n", pred.value, pred.upper,
                  note_text(pred).c_str());
    }
  }
  if (args.flag("json")) std::puts((input ? out : out.front()).dump().c_str());
  return 0;
}

int cmd_max(std::span<char* const> argv) {
  if (asks_daemon(argv)) return cmd_max_daemon(argv, kMaxFromDaemon);
  const Args args(argv, kMaxFromFile);
  const model::Model m = read_model(args.required("model"));
  const std::string vary = args.required("vary");
  const std::string size = args.required("capacity");
  const double capacity = static_cast<double>(protocol::parse_size(size));
  if (!(capacity > 0)) throw UsageError("--capacity expects a size like 24GiB, got '" + size + "'");
  model::FitSearch search;
  if (auto step = args.value("step")) search.step = parse_number(*step, "--step");
  if (!(search.step > 0)) throw UsageError("--step must be positive");
  model::Point p = point_from_words(args.positional(), m);
  // The varied parameter needs no value of its own; any stands in until the search sets it.
  p.values.try_emplace(vary, search.step);
  model::Fitting best;
  try {
    best = model::largest_fitting(m, p, vary, capacity, search);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (args.flag("json")) {
    nlohmann::ordered_json out = {
        {"vary", vary}, {"value", best.value}, {"capacity_bytes", capacity}};
    if (best.value > 0) {
      out["peak_bytes"] = best.at.value;
      out["upper_bytes"] = best.at.upper;
      model::put_extrapolation(out, best.at);
    }
    std::puts(out.dump().c_str());
  } else if (best.value <= 0) {
    std::printf("no value of %s fits in %s\n", vary.c_str(), gib(capacity).c_str());
  } else {
    const std::string note = model::extrapolation_note(best.at);
    std::printf("largest %s that fits in %s: %g (predicted %s, upper bound %s%s%s)\n", vary.c_str(),
                gib(capacity).c_str(), best.value, gib(best.at.value).c_str(),
                gib(best.at.upper).c_str(), note.empty() ? "" : "; ", note.c_str());
  }
  return 0;
}

}  // namespace memwatch::cli
