#include "settings/config_file.hpp"

#include <yaml.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <variant>
#include <vector>

#include "optional_library.hpp"

namespace memwatch::shim {

namespace {

struct YamlApi {
  decltype(&yaml_parser_initialize) parser_initialize;
  decltype(&yaml_parser_delete) parser_delete;
  decltype(&yaml_parser_set_input_string) set_input_string;
  decltype(&yaml_parser_load) load;
  decltype(&yaml_document_delete) document_delete;
  decltype(&yaml_document_get_root_node) root_node;
  decltype(&yaml_document_get_node) node;
};

// Loaded once; null when libyaml is not installed.
const YamlApi* yaml_api() {
  static const YamlApi* api = []() -> const YamlApi* {
    void* lib = optional_library_open({"libyaml-0.so.2"});
    static YamlApi a;
    const bool ok = lib != nullptr &&
                    optional_library_bind(
                        lib, plain_dlsym, std::pair{"yaml_parser_initialize", &a.parser_initialize},
                        std::pair{"yaml_parser_delete", &a.parser_delete},
                        std::pair{"yaml_parser_set_input_string", &a.set_input_string},
                        std::pair{"yaml_parser_load", &a.load},
                        std::pair{"yaml_document_delete", &a.document_delete},
                        std::pair{"yaml_document_get_root_node", &a.root_node},
                        std::pair{"yaml_document_get_node", &a.node});
    return ok ? &a : nullptr;
  }();
  return api;
}

// One step of a key: a mapping's entry by name, or a list's element by index.
using Step = std::variant<std::string, std::size_t>;

bool parse_key(std::string_view key, std::vector<Step>& steps) {
  while (!key.empty()) {
    const std::size_t end = key.find_first_of(".[");
    if (end != 0) steps.emplace_back(std::string(key.substr(0, end)));
    if (end == std::string_view::npos) return true;
    if (key[end] == '.') {
      key.remove_prefix(end + 1);
      if (key.empty()) return false;
      continue;
    }
    const std::size_t close = key.find(']', end);
    if (close == std::string_view::npos) return false;
    std::size_t index = 0;
    const char* first = key.data() + end + 1;
    auto [ptr, ec] = std::from_chars(first, key.data() + close, index);
    if (ec != std::errc() || ptr != key.data() + close) return false;
    steps.emplace_back(index);
    key.remove_prefix(close + 1);
    if (key.starts_with(".")) key.remove_prefix(1);
  }
  return !steps.empty();
}

std::string_view scalar_of(const yaml_node_t* n) {
  return {reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length};
}

bool number_of(const yaml_node_t* n, double& out) {
  if (n == nullptr || n->type != YAML_SCALAR_NODE) return false;
  const std::string_view text = scalar_of(n);
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(out);
}

yaml_node_t* step_into(const YamlApi& y, yaml_document_t& doc, yaml_node_t* n, const Step& step) {
  if (n == nullptr) return nullptr;
  if (const auto* name = std::get_if<std::string>(&step)) {
    if (n->type != YAML_MAPPING_NODE) return nullptr;
    for (yaml_node_pair_t* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p) {
      yaml_node_t* k = y.node(&doc, p->key);
      if (k != nullptr && k->type == YAML_SCALAR_NODE && scalar_of(k) == *name)
        return y.node(&doc, p->value);
    }
    return nullptr;
  }
  const std::size_t index = std::get<std::size_t>(step);
  if (n->type != YAML_SEQUENCE_NODE) return nullptr;
  const yaml_node_item_t* items = n->data.sequence.items.start;
  if (index >= static_cast<std::size_t>(n->data.sequence.items.top - items)) return nullptr;
  return y.node(&doc, items[index]);
}

// The number at `n`: a scalar, or the product of a list of scalars.
ConfigNumber value_at(const YamlApi& y, yaml_document_t& doc, const yaml_node_t* n,
                      const std::string& where) {
  ConfigNumber result;
  if (n->type == YAML_SEQUENCE_NODE) {
    result.value = 1;
    for (const yaml_node_item_t* i = n->data.sequence.items.start; i < n->data.sequence.items.top;
         ++i) {
      double element = 0;
      if (!number_of(y.node(&doc, *i), element)) {
        result.error = where + " is a list with an element that is not a number";
        return result;
      }
      result.value *= element;
    }
    return result;
  }
  if (!number_of(n, result.value))
    result.error = where + (n->type == YAML_SCALAR_NODE
                                ? " is '" + std::string(scalar_of(n)) + "', not a number"
                                : " is a mapping, not a number or a list of numbers");
  return result;
}

}  // namespace

ConfigNumber config_file_number(const std::string& path, std::string_view key) {
  const std::string where = path + ": '" + std::string(key) + "'";
  std::vector<Step> steps;
  if (!parse_key(key, steps))
    return {
        0, "'" + std::string(key) + "' is not a key (expected a.b.c, with [i] for a list element)"};
  std::ifstream in(path);
  if (!in) return {0, "cannot read " + path + ": " + std::strerror(errno)};
  std::stringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  const YamlApi* y = yaml_api();
  if (y == nullptr) return {0, "cannot read " + path + ": libyaml-0.so.2 is not installed"};

  yaml_parser_t parser;
  if (y->parser_initialize(&parser) == 0) return {0, "cannot read " + path + ": out of memory"};
  y->set_input_string(&parser, reinterpret_cast<const unsigned char*>(content.data()),
                      content.size());
  yaml_document_t doc;
  if (y->load(&parser, &doc) == 0) {
    ConfigNumber bad{0, path + ": not YAML or JSON (line " +
                            std::to_string(parser.problem_mark.line + 1) + ": " +
                            (parser.problem ? parser.problem : "unreadable") + ")"};
    y->parser_delete(&parser);
    return bad;
  }
  yaml_node_t* node = y->root_node(&doc);
  for (const Step& step : steps) node = step_into(*y, doc, node, step);
  const ConfigNumber result =
      node == nullptr ? ConfigNumber{0, where + " is not in it"} : value_at(*y, doc, node, where);
  y->document_delete(&doc);
  y->parser_delete(&parser);
  return result;
}

}  // namespace memwatch::shim
