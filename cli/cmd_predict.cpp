// `memwatch predict --model MODEL.json (--input FILE | name=value...) [--json]`: the model's
// prediction and upper bound at each point.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "args.hpp"
#include "memwatch/model/model.hpp"
#include "memwatch/model/model_json.hpp"
#include "memwatch/model/table_parse.hpp"
#include "model_io.hpp"

namespace memwatch::cli {

namespace {

constexpr const char* usage =
    "usage: memwatch predict --model MODEL.json --input FILE [--json]\n"
    "       memwatch predict --model MODEL.json name=value... [--json]\n"
    "FILE is CSV whose header names the model's parameters (other columns are ignored) or JSON\n"
    "Lines with a \"params\" object. --json prints [{\"prediction\":..,\"upper\":..}, ...].";

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

int cmd_predict_daemon(std::span<char* const> argv);

int cmd_predict(std::span<char* const> argv) {
  // With --workload the daemon answers from its latest model; with --model, a model file does.
  for (const char* word : argv)
    if (std::string_view(word) == "--workload" || std::string_view(word).starts_with("--workload="))
      return cmd_predict_daemon(argv);
  const Args args(argv, {"model", "input"}, {"json", "help"});
  if (args.flag("help")) {
    std::puts(usage);
    return 0;
  }
  const std::string model_path = args.required("model");
  const auto input = args.value("input");
  if (input.has_value() == !args.positional().empty())
    throw UsageError(std::string("give either --input FILE or name=value words\n") + usage);

  model::Model m;
  try {
    m = model::model_from_json(read_file(model_path));
  } catch (const model::ModelJsonError& e) {
    throw std::runtime_error(model_path + ": " + e.what());
  }
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
      out.push_back({{"prediction", pred.value},
                     {"upper", pred.upper},
                     {"extrapolating", pred.extrapolating}});
    } else {
      std::printf("prediction %.6g  upper %.6g%s\n", pred.value, pred.upper,
                  pred.extrapolating ? "  (extrapolating: outside the training range)" : "");
    }
  }
  if (args.flag("json")) std::puts((input ? out : out.front()).dump().c_str());
  return 0;
}

}  // namespace memwatch::cli
