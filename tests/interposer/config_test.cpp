// Configuration from the environment: every variable, good and bad values.
#include "settings/config.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "process.hpp"

using namespace memwatch::shim;

namespace {

std::map<std::string, std::string> g_env;
std::vector<std::string> g_warnings;

const char* fake_env(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
void collect(const std::string& message) {
  g_warnings.push_back(message);
}

Config load(std::map<std::string, std::string> env, std::vector<std::string> args = {"/bin/prog"}) {
  g_env = std::move(env);
  g_warnings.clear();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Config c{};
  config_load(c, fake_env, static_cast<int>(args.size()), argv.data(), collect);
  return c;
}

double param(const Config& c, const char* name) {
  const Param* p = config_find_param(c, name);
  return p ? p->value : -1;
}

TEST(Config, DefaultsWithAnEmptyEnvironment) {
  const Config c = load({});
  EXPECT_TRUE(g_warnings.empty());
  EXPECT_STREQ(c.workload, "prog");
  EXPECT_EQ(c.param_count, 0);
  EXPECT_EQ(c.on_oom, OnOom::warn);
  EXPECT_EQ(c.allocator, Allocator::system);
  EXPECT_EQ(c.batch_bytes, kBatchBytes);
  EXPECT_EQ(c.watch.share, 0.9);
  EXPECT_EQ(c.watch.horizon_s, 30);
  EXPECT_EQ(c.report_path[0], '\0');
  EXPECT_EQ(std::string(c.endpoint).rfind("ipc://", 0), 0u);
}

TEST(Config, EveryVariableParsed) {
  const Config c = load({{"MEMWATCH_REPORT", "/tmp/r.%p.json"},
                         {"MEMWATCH_ENDPOINT", "tcp://127.0.0.1:5555"},
                         {"MEMWATCH_CURVE_KEYS", "/etc/memwatch/keys"},
                         {"MEMWATCH_WORKLOAD", "unet3d"},
                         {"MEMWATCH_PARAMS", "batch=4, dim=128,lr=1e-4"},
                         {"MEMWATCH_CAPACITY", "host=24GiB,device0=80GiB,device3=1.5G"},
                         {"MEMWATCH_ON_OOM", "abort"},
                         {"MEMWATCH_ALLOCATOR", "jemalloc"},
                         {"MEMWATCH_SIGNALS", "off"},
                         {"MEMWATCH_BATCH_BYTES", "0"},
                         {"MEMWATCH_WARN_SHARE", "80%"},
                         {"MEMWATCH_WARN_HORIZON", "45s"},
                         {"MEMWATCH_JOB", "4242"}});
  EXPECT_TRUE(g_warnings.empty()) << g_warnings.front();
  EXPECT_STREQ(c.report_path, "/tmp/r.%p.json");
  EXPECT_STREQ(c.endpoint, "tcp://127.0.0.1:5555");
  EXPECT_STREQ(c.curve_keys, "/etc/memwatch/keys");
  EXPECT_STREQ(c.workload, "unet3d");
  EXPECT_EQ(param(c, "batch"), 4);
  EXPECT_EQ(param(c, "dim"), 128);
  EXPECT_DOUBLE_EQ(param(c, "lr"), 1e-4);
  EXPECT_EQ(c.host_capacity, 24LL << 30);
  EXPECT_EQ(c.device_capacity[0], 80LL << 30);
  EXPECT_EQ(c.device_capacity[3], 3LL << 29);
  EXPECT_EQ(c.on_oom, OnOom::abort);
  EXPECT_EQ(c.allocator, Allocator::jemalloc);
  EXPECT_FALSE(c.signals);
  EXPECT_EQ(c.batch_bytes, 0);
  EXPECT_DOUBLE_EQ(c.watch.share, 0.8);
  EXPECT_EQ(c.watch.horizon_s, 45);
  EXPECT_EQ(c.job_root, 4242);
}

TEST(Config, SlurmsJobAndStepNameTheSchedulersJob) {
  EXPECT_STREQ(load({{"SLURM_JOB_ID", "81234"}, {"SLURM_STEP_ID", "0"}}).scheduler_job, "81234.0");
  EXPECT_STREQ(load({{"SLURM_JOB_ID", "81234"}}).scheduler_job, "81234");
  EXPECT_STREQ(load({{"SLURM_JOB_ID", "81 234; rm"}}).scheduler_job, "");  // not a plain name
  EXPECT_STREQ(load({}).scheduler_job, "");
  // memwatch's Slurm plugin names the batch script's step, where Slurm sets no step id.
  EXPECT_STREQ(
      load({{"SLURM_JOB_ID", "81234"}, {"MEMWATCH_SCHEDULER_JOB", "81234.batch"}}).scheduler_job,
      "81234.batch");
  EXPECT_TRUE(g_warnings.empty());
}

TEST(Config, ArgvParamsTakeBothFlagForms) {
  const Config c = load({{"MEMWATCH_ARGV_PARAMS", "--batch-size:batch,--dim:dim,--absent:x"}},
                        {"/opt/train", "--batch-size", "8", "--dim=96", "--other", "1"});
  EXPECT_TRUE(g_warnings.empty());
  EXPECT_EQ(param(c, "batch"), 8);
  EXPECT_EQ(param(c, "dim"), 96);
  EXPECT_EQ(config_find_param(c, "x"), nullptr);
}

TEST(Config, ExplicitParamsOverrideArgvParams) {
  const Config c =
      load({{"MEMWATCH_ARGV_PARAMS", "--batch-size:batch"}, {"MEMWATCH_PARAMS", "batch=2"}},
           {"/opt/train", "--batch-size", "8"});
  EXPECT_EQ(param(c, "batch"), 2);
}

TEST(Config, EachBadValueGivesOneMessageNamingTheVariableAndKeepsTheDefault) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"MEMWATCH_PARAMS", "batch=four"},
      {"MEMWATCH_PARAMS", "batch"},
      {"MEMWATCH_PARAMS", "=3"},
      {"MEMWATCH_PARAMS", "dim=nan"},
      {"MEMWATCH_PARAMS", "dim=1e309"},
      {"MEMWATCH_ARGV_PARAMS", "batch"},
      {"MEMWATCH_CAPACITY", "host=lots"},
      {"MEMWATCH_CAPACITY", "gpu=1G"},
      {"MEMWATCH_CAPACITY", "device99=1G"},
      {"MEMWATCH_ON_OOM", "maybe"},
      {"MEMWATCH_ALLOCATOR", "tcmalloc"},
      {"MEMWATCH_SIGNALS", "yes"},
      {"MEMWATCH_WORKLOAD", "two words"},
      {"MEMWATCH_ENDPOINT", "localhost:5555"},
      {"MEMWATCH_BATCH_BYTES", "1GiB"},
      {"MEMWATCH_WARN_SHARE", "1.5"},
      {"MEMWATCH_WARN_SHARE", "0%"},
      {"MEMWATCH_WARN_HORIZON", "-3"},
      {"MEMWATCH_WARN_HORIZON", "soon"},
      {"MEMWATCH_JOB", "0"},
      {"MEMWATCH_JOB", "root"},
  };
  for (const auto& [variable, value] : bad) {
    const Config c = load({{variable, value}});
    ASSERT_EQ(g_warnings.size(), 1u) << variable << "=" << value;
    EXPECT_NE(g_warnings[0].find(variable), std::string::npos) << g_warnings[0];
    EXPECT_NE(g_warnings[0].find("expected"), std::string::npos) << g_warnings[0];
    EXPECT_EQ(c.param_count, 0);
    EXPECT_EQ(c.host_capacity, 0);
    EXPECT_EQ(c.on_oom, OnOom::warn);
    EXPECT_EQ(c.allocator, Allocator::system);
    EXPECT_STREQ(c.workload, "prog");
    EXPECT_EQ(c.watch.share, 0.9);
    EXPECT_EQ(c.watch.horizon_s, 30);
  }
}

TEST(Config, ANonNumericProgramFlagIsNamed) {
  load({{"MEMWATCH_ARGV_PARAMS", "--batch-size:batch"}}, {"/opt/train", "--batch-size=big"});
  ASSERT_EQ(g_warnings.size(), 1u);
  EXPECT_NE(g_warnings[0].find("--batch-size"), std::string::npos);
  EXPECT_NE(g_warnings[0].find("big"), std::string::npos);
}

TEST(Config, Sizes) {
  EXPECT_EQ(config_parse_size("1000"), 1000);
  EXPECT_EQ(config_parse_size("4K"), 4096);
  EXPECT_EQ(config_parse_size("4KB"), 4000);
  EXPECT_EQ(config_parse_size("24GiB"), 24LL << 30);
  EXPECT_EQ(config_parse_size("0.5 MiB"), 1 << 19);
  EXPECT_EQ(config_parse_size("2TB"), 2000000000000LL);
  EXPECT_EQ(config_parse_size("GiB"), -1);
  EXPECT_EQ(config_parse_size("12 parsecs"), -1);
  EXPECT_EQ(config_parse_size("99999999999TiB"), -1);
}

TEST(Config, TooManyParametersIsAnError) {
  std::string many;
  for (int i = 0; i <= kMaxParams; ++i) many += "p" + std::to_string(i) + "=1,";
  const Config c = load({{"MEMWATCH_PARAMS", many}});
  ASSERT_EQ(g_warnings.size(), 1u);
  EXPECT_EQ(c.param_count, 0);
}

// A workload run by an interpreter is named by what it runs, not by the interpreter.
TEST(Config, AnInterpretersWorkloadIsTheScriptOrModuleItRuns) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"/usr/bin/python3", "train.py", "--batch-size", "2"}, "train"},
      {{"python3.11", "-u", "-W", "ignore", "/opt/unet/train_3d.py"}, "train_3d"},
      {{"python3", "-m", "pytorch3dunet.train", "--config", "c.yml"}, "pytorch3dunet.train"},
      {{"python3", "-mtorch.distributed.run", "train.py"}, "torch.distributed.run"},
      {{"python3", "-c", "import torch"}, "python3"},
      {{"python3"}, "python3"},
      {{"/bin/bash", "-x", "scripts/run job.sh"}, "run_job"},
      {{"sh", "-c", "exec ./train"}, "sh"},
      {{"/usr/local/bin/unet3d-train", "--dim", "64"}, "unet3d-train"},
      {{"./python-tool", "x.py"}, "python-tool"},
  };
  for (const auto& [args, expected] : cases) {
    const Config c = load({}, args);
    EXPECT_STREQ(c.workload, expected.c_str())
        << args[0] << " " << (args.size() > 1 ? args[1] : "");
  }
}

// A trainer's own config file, as pytorch-3dunet has one: parameters by dotted keys.
class ConfigFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  memwatch::test::TempDir temp_;
  const std::string dir_ = temp_.path();
};

constexpr const char* kUnetYaml = R"(model:
  name: UNet3D
  f_maps: [16, 32, 64]
loaders:
  batch_size: 4
  train:
    slice_builder:
      patch_shape: [32, 64, 64]
)";

TEST_F(ConfigFile, YamlKeysListsAndTheProductOfAShape) {
  const std::string yaml = write("train.yml", kUnetYaml);
  const Config c = load(
      {{"MEMWATCH_CONFIG_PARAMS",
        "--config:loaders.batch_size:batch,--config:loaders.train.slice_builder.patch_shape:patch,"
        "--config:model.f_maps[1]:filters,--config:loaders.train.slice_builder.patch_shape[0]:"
        "depth"}},
      {"/usr/bin/python3", "train.py", "--config", yaml});
  EXPECT_TRUE(g_warnings.empty()) << g_warnings[0];
  EXPECT_EQ(param(c, "batch"), 4);
  EXPECT_EQ(param(c, "patch"), 32 * 64 * 64);
  EXPECT_EQ(param(c, "filters"), 32);
  EXPECT_EQ(param(c, "depth"), 32);
  EXPECT_STREQ(c.workload, "train");
}

TEST_F(ConfigFile, JsonTooWithTheEqualsFormAndParamsWinning) {
  const std::string json = write("c.json", R"({"trainer": {"batch": 8, "dims": [2, 3]}})");
  const Config c =
      load({{"MEMWATCH_CONFIG_PARAMS", "--cfg:trainer.batch:batch,--cfg:trainer.dims:volume"},
            {"MEMWATCH_PARAMS", "batch=16"}},
           {"/bin/prog", "--cfg=" + json});
  EXPECT_TRUE(g_warnings.empty()) << g_warnings[0];
  EXPECT_EQ(param(c, "batch"), 16);
  EXPECT_EQ(param(c, "volume"), 6);
}

TEST_F(ConfigFile, EachBadItemIsNamedWithItsFileAndKeyAndTheOthersAreKept) {
  const std::string yaml = write("train.yml", kUnetYaml);
  const std::string broken = write("broken.yml", "a: [1, 2\nb: {");
  const std::string missing = dir_ + "/missing.yml";
  const Config c =
      load({{"MEMWATCH_CONFIG_PARAMS",
             "--config:loaders.batch_size:batch,--config:loaders.epochs:epochs,"
             "--config:model.name:name,--config:model:m,--other:x:y,--broken:a:z,--gone:k:w,"
             "--config:model.f_maps[7]:f7,nonsense"}},
           {"/bin/prog", "--config", yaml, "--broken", broken, "--gone", missing});
  EXPECT_EQ(param(c, "batch"), 4);  // the good item is kept
  for (const char* left_out : {"epochs", "name", "m", "y", "z", "w", "f7"})
    EXPECT_EQ(config_find_param(c, left_out), nullptr) << left_out;
  ASSERT_EQ(g_warnings.size(), 1u);  // one line for the variable, every problem in it
  const std::string& w = g_warnings[0];
  EXPECT_TRUE(w.starts_with("MEMWATCH_CONFIG_PARAMS: ")) << w;
  EXPECT_NE(w.find(yaml + ": 'loaders.epochs' is not in it (parameter 'epochs' left out)"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find(yaml + ": 'model.name' is 'UNet3D', not a number"), std::string::npos) << w;
  EXPECT_NE(w.find(yaml + ": 'model' is a mapping"), std::string::npos) << w;
  EXPECT_NE(w.find(broken + ": not YAML or JSON (line"), std::string::npos) << w;
  EXPECT_NE(w.find("cannot read " + missing), std::string::npos) << w;
  EXPECT_NE(w.find("'model.f_maps[7]' is not in it"), std::string::npos) << w;
  EXPECT_NE(w.find("expected --flag:key:name[,...], got 'nonsense'"), std::string::npos) << w;
  EXPECT_EQ(w.find("--other"), std::string::npos) << "a flag the program was not given is no error";
}

}  // namespace
