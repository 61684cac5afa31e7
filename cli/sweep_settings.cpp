#include "sweep_settings.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace memwatch::cli {

namespace fs = std::filesystem;

namespace {

void usage_check(const Args& args) {
  args.refuse_positional("the command to run goes after --");
  if (args.rest().empty())
    throw UsageError(
        "no command to run: memwatch sweep --grid NAME=V1,V2 --out FILE -- CMD {NAME}");
}

}  // namespace

SweepSettings read_sweep_settings(const Args& args) {
  usage_check(args);
  SweepSettings s;
  for (const auto& spec : args.values("grid")) {
    s.axes.push_back(parse_axis(spec));
    for (std::size_t a = 0; a + 1 < s.axes.size(); ++a)
      if (s.axes[a].name == s.axes.back().name)
        throw UsageError("--grid " + s.axes.back().name + " given twice");
  }
  s.out = args.required("out");
  s.resume = args.flag("resume");
  if (auto r = args.value("repeat")) s.repeat = parse_count(*r, "--repeat", 1, 1'000'000);
  if (auto t = args.value("timeout")) {
    s.timeout_s = parse_number(*t, "--timeout");
    if (*s.timeout_s <= 0) throw UsageError("--timeout must be positive");
  }
  s.workload = args.value("workload");
  s.command = args.rest();
  std::vector<std::string> extra;
  if (auto path = args.value("config-template")) {
    std::ifstream in(*path);
    if (!in) throw UsageError("--config-template " + *path + ": " + std::strerror(errno));
    std::stringstream text;
    text << in.rdbuf();
    s.config_template = text.str();
    s.config_extension = fs::path(*path).extension().string();
    extra.push_back("config");
    bool used = false;
    for (const auto& word : s.command) used = used || word.find("{config}") != std::string::npos;
    if (!used)
      throw UsageError(
          "--config-template needs {config} in the command, where each run's file "
          "goes");
  }
  check_placeholders(s.command, s.axes, extra);
  return s;
}

RunSpec run_spec(const SweepSettings& s, const Point& p, std::size_t i, const fs::path& dir,
                 const fs::path& shim) {
  RunSpec spec;
  const std::string stem = "run-" + std::to_string(i);
  std::string config_path;
  if (s.config_template) {
    config_path = (dir / (stem + "-config" + s.config_extension)).string();
    std::ofstream(config_path) << substitute(*s.config_template, s.axes, p);
  }
  for (const auto& word : s.command) {
    std::string filled = substitute(word, s.axes, p);
    if (s.config_template) filled = replace_all(std::move(filled), "{config}", config_path);
    spec.argv.push_back(std::move(filled));
  }
  spec.params = describe(s.axes, p, ',');
  spec.report = dir / (stem + ".json");
  spec.log = dir / (stem + ".log");
  spec.shim = shim;
  spec.workload = s.workload;
  spec.timeout_s = s.timeout_s;
  return spec;
}

fs::path make_run_folder() {
  const char* tmp_env = std::getenv("TMPDIR");
  std::string tmp_template =
      std::string(tmp_env && *tmp_env ? tmp_env : "/tmp") + "/memwatch-sweep-XXXXXX";
  if (!mkdtemp(tmp_template.data()))
    throw std::runtime_error("mkdtemp " + tmp_template + ": " + std::strerror(errno));
  return tmp_template;
}

std::string clock_text(double seconds) {
  auto s = static_cast<long>(std::lround(seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

std::string gib_text(std::optional<double> bytes) {
  if (!bytes) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", *bytes / (1024.0 * 1024 * 1024));
  return buf;
}

}  // namespace memwatch::cli
