// unet3d-train, train.py and the transformer's train.py as programs: parameter counts against the
// architecture's formula, a short run whose loss falls, bad flags, NIfTI data, and peaks under
// the shim.
#include <gtest/gtest.h>
#include <nifti1_io.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "process.hpp"

namespace {

namespace fs = std::filesystem;
using memwatch::test::Environment;
using memwatch::test::Finished;
using memwatch::test::lines_of;
using memwatch::test::read_file;
using memwatch::test::TempDir;

// A run may take as long as the whole test may (the TIMEOUT in CMakeLists.txt): training is slow
// on a loaded machine.
Finished run(const std::vector<std::string>& argv, const Environment& env = {}) {
  return memwatch::test::run(argv, env, std::chrono::seconds(600));
}

struct Config {
  std::int64_t channels, classes, filters, levels;
};

// Level i has F*2^i filters. A block of two 3x3x3 convolutions from `in` to `out` filters has
// 27*out*(in+out) weights, two biases of `out` and two batch norms of 2*out (weight and bias).
// The decoder's level i adds a 2x2x2 transposed convolution from the level below (with bias)
// and a block from 2*F_i (the skip and the upsampled) to F_i; the head is 1x1x1 to the classes.
std::int64_t formula(const Config& c) {
  auto width = [&](std::int64_t i) { return c.filters << i; };
  auto block = [](std::int64_t in, std::int64_t out) { return 27 * out * (in + out) + 6 * out; };
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < c.levels; ++i) n += block(i ? width(i - 1) : c.channels, width(i));
  for (std::int64_t i = 0; i + 1 < c.levels; ++i)
    n += 8 * width(i + 1) * width(i) + width(i) + block(2 * width(i), width(i));
  return n + width(0) * c.classes + c.classes;
}

nlohmann::json summary_of(const Finished& o) {
  auto lines = lines_of(o.out);
  EXPECT_FALSE(lines.empty()) << o.err;
  if (lines.empty()) return {};
  return nlohmann::json::parse(lines.back());
}

std::vector<std::string> with_flags(std::vector<std::string> argv, const Config& c) {
  for (auto [flag, v] : {std::pair{"--channels", c.channels},
                         {"--classes", c.classes},
                         {"--filters", c.filters},
                         {"--levels", c.levels}}) {
    argv.push_back(flag);
    argv.push_back(std::to_string(v));
  }
  return argv;
}

const std::vector<Config> kConfigs{{1, 1, 16, 5}, {4, 3, 16, 5}, {4, 3, 8, 4},
                                   {2, 5, 3, 3},  {1, 2, 32, 1}, {3, 1, 8, 2}};

TEST(Unet3dTrain, ReferenceConfigurationHasTheReferenceParameterCount) {
  EXPECT_EQ(formula({1, 1, 16, 5}), 5647857);
  auto o = run(with_flags({UNET3D_TRAIN, "--steps", "0", "--dim", "16", "--batch-size", "2"},
                          {1, 1, 16, 5}));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(summary_of(o)["parameters"], 5647857);
}

TEST(Unet3dTrain, ParameterCountsFollowTheFormula) {
  for (const auto& c : kConfigs) {
    auto o = run(with_flags({UNET3D_TRAIN, "--steps", "0", "--dim", "16", "--batch-size", "2"}, c));
    ASSERT_EQ(o.exit_code, 0) << o.err;
    auto s = summary_of(o);
    EXPECT_EQ(s["parameters"].get<std::int64_t>(), formula(c))
        << c.channels << " " << c.classes << " " << c.filters << " " << c.levels;
    EXPECT_EQ(s["steps"], 0);
    EXPECT_TRUE(s["final_loss"].is_null());
  }
}

std::vector<double> step_losses(const std::string& out) {
  std::vector<double> losses;
  for (const auto& line : lines_of(out))
    if (line.starts_with("step ")) losses.push_back(std::stod(line.substr(line.find("loss ") + 5)));
  return losses;
}

TEST(Unet3dTrain, ShortRunLossFallsAndIsReproducibleFromTheSeed) {
  const std::vector<std::string> argv{UNET3D_TRAIN, "--dim",     "16",      "--levels", "3",
                                      "--filters",  "4",         "--steps", "12",       "--lr",
                                      "0.01",       "--threads", "1",       "--seed",   "1"};
  auto o = run(argv);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto s = summary_of(o);
  for (const char* key : {"parameters", "steps", "final_loss", "elapsed_s"})
    EXPECT_TRUE(s.contains(key)) << key;
  EXPECT_EQ(s["steps"], 12);
  auto losses = step_losses(o.out);
  ASSERT_EQ(losses.size(), 12u);
  const double first = (losses[0] + losses[1] + losses[2]) / 3;
  const double last = (losses[9] + losses[10] + losses[11]) / 3;
  EXPECT_LT(last, first - 0.05) << o.out;
  EXPECT_DOUBLE_EQ(s["final_loss"].get<double>(), losses.back());

  auto again = run(argv);
  EXPECT_EQ(step_losses(again.out), losses);
}

TEST(Unet3dTrain, Bf16AndShapeRun) {
  auto o = run({UNET3D_TRAIN, "--shape", "16,8,24", "--levels", "3", "--filters", "4", "--steps",
                "2", "--precision", "bf16", "--batch-size", "2", "--threads", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto s = summary_of(o);
  EXPECT_EQ(s["precision"], "bf16");
  EXPECT_EQ(s["shape"], nlohmann::json::array({16, 8, 24}));
  EXPECT_TRUE(s["final_loss"].is_number());
}

const std::vector<std::vector<std::string>> kBadFlags{
    {"--bogus", "1"},
    {"--batch-size", "0"},
    {"--batch-size", "two"},
    {"--dim", "24"},
    {"--dim", "48", "--levels", "6"},
    {"--shape", "16,16"},
    {"--precision", "fp16"},
    {"--device", "tpu"},
    {"--device", "cuda"},
    {"--lr", "-1"},
    {"--steps", "1.5"},
    {"--dim"},
    {"--dim", "16", "--shape", "16,16,16"},
    {"stray"},
    {"--dim", "16", "--levels", "5", "--batch-size", "1"},  // one value per channel at the bottom
};

TEST(Unet3dTrain, BadFlagsGiveOneLineAndStatusTwo) {
  for (const auto& flags : kBadFlags) {
    std::vector<std::string> argv{UNET3D_TRAIN};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto o = run(argv);
    EXPECT_EQ(o.exit_code, 2) << flags[0];
    EXPECT_EQ(lines_of(o.err).size(), 1u) << o.err;
    EXPECT_TRUE(o.err.starts_with("unet3d-train: ")) << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
  }
  auto o = run({UNET3D_TRAIN, "--dim", "24", "--levels", "4", "--steps", "0"});
  EXPECT_EQ(o.exit_code, 0) << "24 is divisible by 2^3: " << o.err;
}

void write_nifti(const fs::path& path, std::array<int, 4> size, int datatype, float scale) {
  int dims[8] = {size[3] > 1 ? 4 : 3, size[0], size[1], size[2], size[3], 1, 1, 1};
  nifti_image* nim = nifti_make_new_nim(dims, datatype, /*data_fill=*/1);
  std::string name = path.string();
  nifti_set_filenames(nim, name.c_str(), /*check=*/0, /*set_byte_order=*/1);
  for (std::size_t i = 0; i < nim->nvox; ++i) {
    const auto x = static_cast<int>(i % static_cast<std::size_t>(size[0]));
    if (datatype == DT_UINT8)
      static_cast<std::uint8_t*>(nim->data)[i] = x < 4 ? 1 : 0;
    else
      static_cast<float*>(nim->data)[i] = scale * static_cast<float>(i % 97);
  }
  nifti_image_write(nim);
  nifti_image_free(nim);
}

TEST(Unet3dTrain, TrainsOnNiftiVolumes) {
  TempDir dir;
  const fs::path images = dir.file("imagesTr"), labels = dir.file("labelsTr");
  fs::create_directories(images);
  fs::create_directories(labels);
  for (const char* name : {"c1.nii.gz", "c2.nii"}) {
    write_nifti(images / name, {20, 16, 12, 4}, DT_FLOAT32, 0.5f);
    write_nifti(labels / name, {20, 16, 12, 1}, DT_UINT8, 1.0f);
  }
  auto o = run({UNET3D_TRAIN, "--data", dir.path(), "--dim", "16", "--levels", "3", "--filters",
                "4", "--steps", "3", "--batch-size", "3", "--threads", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto s = summary_of(o);
  EXPECT_EQ(s["data"], "nifti");
  EXPECT_TRUE(s["final_loss"].is_number());

  o = run({UNET3D_TRAIN, "--data", dir.file("missing"), "--dim", "32", "--steps", "1"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("imagesTr"), std::string::npos) << o.err;
}

bool python_has_torch() {
  return run({"/usr/bin/python3", "-c", "import torch, numpy"}).exit_code == 0;
}

TEST(TrainPy, SummaryParsesAndParameterCountsMatchTheCppTrainer) {
  if (!python_has_torch()) GTEST_SKIP() << "/usr/bin/python3 has no torch (python3-torch)";
  auto o = run({"/usr/bin/python3", TRAIN_PY, "--dim", "16", "--levels", "3", "--filters", "4",
                "--steps", "3", "--threads", "1", "--lr", "0.01"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto s = summary_of(o);
  EXPECT_EQ(s["steps"], 3);
  EXPECT_TRUE(s["final_loss"].is_number());
  EXPECT_TRUE(s["elapsed_s"].is_number());
  EXPECT_EQ(s["parameters"].get<std::int64_t>(), formula({4, 3, 4, 3}));

  for (const auto& c : kConfigs) {
    auto py = run(with_flags(
        {"/usr/bin/python3", TRAIN_PY, "--steps", "0", "--dim", "16", "--batch-size", "2"}, c));
    auto cpp =
        run(with_flags({UNET3D_TRAIN, "--steps", "0", "--dim", "16", "--batch-size", "2"}, c));
    ASSERT_EQ(py.exit_code, 0) << py.err;
    EXPECT_EQ(summary_of(py)["parameters"], summary_of(cpp)["parameters"]);
  }
}

TEST(TrainPy, BadFlagsAndNiftiVolumes) {
  if (!python_has_torch()) GTEST_SKIP() << "/usr/bin/python3 has no torch (python3-torch)";
  for (const auto& flags : kBadFlags) {
    std::vector<std::string> argv{"/usr/bin/python3", TRAIN_PY};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto o = run(argv);
    EXPECT_EQ(o.exit_code, 2) << flags[0] << o.err;
    EXPECT_EQ(lines_of(o.err).size(), 1u) << o.err;
  }
  TempDir dir;
  fs::create_directories(dir.file("imagesTr"));
  fs::create_directories(dir.file("labelsTr"));
  write_nifti(dir.file("imagesTr/c.nii.gz"), {20, 16, 12, 4}, DT_FLOAT32, 0.5f);
  write_nifti(dir.file("labelsTr/c.nii.gz"), {20, 16, 12, 1}, DT_UINT8, 1.0f);
  auto o = run({"/usr/bin/python3", TRAIN_PY, "--data", dir.path(), "--dim", "16", "--levels", "3",
                "--filters", "4", "--steps", "2", "--threads", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(summary_of(o)["data"], "nifti");
}

// The transformer's weights: token embedding and output head (vocab x d_model, the head with a
// bias), a learned position per token, and per layer the attention's in- and out-projections
// (4 d^2 + 4 d), the feed-forward's two d x 4d layers (8 d^2 + 5 d) and two layer norms (4 d).
std::int64_t transformer_parameters(std::int64_t vocab, std::int64_t seq, std::int64_t d,
                                    std::int64_t layers) {
  return 2 * vocab * d + vocab + seq * d + layers * (12 * d * d + 13 * d);
}

TEST(TransformerPy, ParameterCountsFollowTheFormulaAndBadFlagsGiveOneLine) {
  if (!python_has_torch()) GTEST_SKIP() << "/usr/bin/python3 has no torch (python3-torch)";
  for (const auto& [seq, d, layers] : {std::tuple{64, 64, 2}, {128, 32, 3}, {16, 96, 1}}) {
    const auto o =
        run({"/usr/bin/python3", TRANSFORMER_PY, "--steps", "0", "--seq-len", std::to_string(seq),
             "--d-model", std::to_string(d), "--layers", std::to_string(layers)});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(summary_of(o)["parameters"].get<std::int64_t>(),
              transformer_parameters(1000, seq, d, layers))
        << "seq " << seq << " d_model " << d << " layers " << layers;
  }
  const auto o = run({"/usr/bin/python3", TRANSFORMER_PY, "--steps", "3", "--seq-len", "32",
                      "--d-model", "32", "--batch-size", "2"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(summary_of(o)["final_loss"].is_number());
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--bogus", "1"},
                                                {"--batch-size", "0"},
                                                {"--seq-len", "x"},
                                                {"--d-model", "66", "--heads", "4"}}) {
    std::vector<std::string> argv{"/usr/bin/python3", TRANSFORMER_PY};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const auto bad = run(argv);
    EXPECT_EQ(bad.exit_code, 2) << flags[0] << bad.err;
    EXPECT_EQ(lines_of(bad.err).size(), 1u) << bad.err;
  }
}

#ifdef SHIM_PATH
// The shim's report for one training step.
nlohmann::json peaks_of(const TempDir& dir, std::int64_t batch, std::int64_t dim) {
  const auto report = dir.file("b" + std::to_string(batch) + "d" + std::to_string(dim) + ".json");
  auto o = run({UNET3D_TRAIN, "--batch-size", std::to_string(batch), "--dim", std::to_string(dim),
                "--levels", "3", "--filters", "4", "--steps", "1", "--threads", "1"},
               {{"LD_PRELOAD", SHIM_PATH}, {"MEMWATCH_REPORT", report}});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  return nlohmann::json::parse(read_file(report));
}

TEST(Unet3dTrainUnderShim, PeaksGrowWithBatchAndDim) {
  TempDir dir;
  auto small = peaks_of(dir, 1, 16);
  auto batch = peaks_of(dir, 2, 16);
  auto dim = peaks_of(dir, 1, 32);
  auto peak = [](const nlohmann::json& r) { return r["host"]["peak_bytes"].get<std::uint64_t>(); };
  EXPECT_GT(peak(batch), peak(small));
  EXPECT_GT(peak(dim), peak(batch));
  // Far below what the activations alone would give, so the shim saw them rather than noise.
  EXPECT_GT(peak(dim) - peak(small), std::uint64_t{8} << 20);
  // Repeat runs agree to 1e-5: to the byte on a quiet machine; under load LibTorch's threads
  // have been seen to differ by 64 bytes of 48 MB.
  const double again = peaks_of(dir, 1, 16)["host"]["peak_bytes"].get<double>();
  EXPECT_NEAR(again / static_cast<double>(peak(small)), 1, 1e-5) << "peaks repeat";
}

// The same network in PyTorch and in LibTorch, the same kernels underneath: what training adds
// is the same in both, and the two peaks differ by a constant, the interpreter and PyTorch's
// Python side (about 56 MiB here), whatever the configuration.
TEST(TrainPyUnderShim, ItsPeaksAreTheCppTrainersPlusTheSameConstant) {
  TempDir dir;
  auto peak = [&](const std::vector<std::string>& trainer, const std::string& batch,
                  const std::string& dim) {
    const std::string report = dir.file("r.json");
    std::vector<std::string> argv = trainer;
    argv.insert(argv.end(), {"--batch-size", batch, "--dim", dim, "--levels", "3", "--filters", "8",
                             "--steps", "2", "--threads", "1"});
    const auto o = run(argv, {{"LD_PRELOAD", SHIM_PATH}, {"MEMWATCH_REPORT", report}});
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return nlohmann::json::parse(read_file(report))["host"]["peak_bytes"].get<std::int64_t>();
  };
  const std::vector<std::string> cxx = {UNET3D_TRAIN};
  const std::vector<std::string> py = {"/usr/bin/python3", TRAIN_PY};
  const std::int64_t small = peak(py, "1", "16") - peak(cxx, "1", "16");
  const std::int64_t large = peak(py, "4", "32") - peak(cxx, "4", "32");
  EXPECT_GT(small, std::int64_t{16} << 20) << "the interpreter's share";
  EXPECT_LT(std::llabs(large - small), std::int64_t{1} << 20)
      << "Python's extra at batch 1, 16^3: " << small << " bytes; at batch 4, 32^3: " << large;
}

// DataLoader workers fork from the trainer holding its model and data: under `memwatch run` the
// three are one job, each worker's figures include the heap it inherited, the job's do not.
TEST(TrainPyUnderShim, DataLoaderWorkersAreOneJobWithTheTrainer) {
  TempDir dir;
  const std::string report = dir.file("job.json");
  const auto o = run({MEMWATCH_CLI, "run",          "--report", report,
                      "--param",    "batch=2",      "--",       "/usr/bin/python3",
                      TRAIN_PY,     "--batch-size", "2",        "--dim",
                      "32",         "--levels",     "3",        "--filters",
                      "8",          "--steps",      "4",        "--threads",
                      "1",          "--workers",    "2"},
                     {{"MEMWATCH_JOB", "\x01unset"}});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto r = nlohmann::json::parse(read_file(report));
  ASSERT_TRUE(r.contains("job")) << r.dump();
  const auto& job = r["job"];
  EXPECT_EQ(r["workload"], "train");
  EXPECT_EQ(job["processes"], 3);
  auto bytes = [](const nlohmann::json& v) { return v.get<std::int64_t>(); };
  const std::int64_t trainer = bytes(r["host"]["peak_bytes"]);
  std::int64_t sum_of_own_peaks = trainer, added_by_workers = 0;
  int workers = 0;
  for (const auto& m : job["members"]) {
    if (m["joined"] != "fork") continue;
    ++workers;
    EXPECT_GT(bytes(m["inherited_bytes"]), std::int64_t{32} << 20) << "the model and PyTorch";
    sum_of_own_peaks += bytes(m["host_peak_bytes"]);
    added_by_workers += bytes(m["host_peak_bytes"]) - bytes(m["inherited_bytes"]);
  }
  EXPECT_EQ(workers, 2);
  const std::int64_t job_peak = bytes(job["host_peak_bytes"]);
  EXPECT_GE(job_peak, trainer);
  EXPECT_LE(job_peak, trainer + added_by_workers + (std::int64_t{1} << 20));
  EXPECT_LT(job_peak, sum_of_own_peaks - (std::int64_t{64} << 20)) << "inherited heaps once";
}

// Attention holds batch x heads x seq^2 scores a layer, the rest of the activations grow as
// batch x seq x d_model: from seq 128 to 256 to 512 the peak's growth more than doubles at each
// step (3.1 times in bench/data/transformer-cpu.csv: a line in seq would double it).
TEST(TransformerPyUnderShim, ItsPeakGrowsWithTheSquareOfTheSequence) {
  TempDir dir;
  auto peak = [&](int seq) {
    const std::string report = dir.file("s" + std::to_string(seq) + ".json");
    const auto o = run({"/usr/bin/python3", TRANSFORMER_PY, "--batch-size", "2", "--seq-len",
                        std::to_string(seq), "--d-model", "64", "--steps", "2"},
                       {{"LD_PRELOAD", SHIM_PATH}, {"MEMWATCH_REPORT", report}});
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return nlohmann::json::parse(read_file(report))["host"]["peak_bytes"].get<double>();
  };
  const double p128 = peak(128), p256 = peak(256), p512 = peak(512);
  EXPECT_GT(p256, p128);
  EXPECT_GT((p512 - p256) / (p256 - p128), 2.5)
      << "peaks at seq 128, 256, 512: " << p128 << ", " << p256 << ", " << p512;
}

#endif

}  // namespace
