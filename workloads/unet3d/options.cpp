#include "options.hpp"

#include <charconv>
#include <cmath>
#include <string_view>

namespace unet3d {

namespace {

std::int64_t parse_int(std::string_view flag, std::string_view text, std::int64_t min) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw UsageError("--" + std::string(flag) + ": expected an integer, got '" + std::string(text) +
                     "'");
  if (v < min)
    throw UsageError("--" + std::string(flag) + " must be at least " + std::to_string(min) +
                     ", got " + std::string(text));
  return v;
}

// One of two names, each standing for a value of E.
template <class E>
E parse_either(std::string_view flag, std::string_view text, std::string_view first, E first_value,
               std::string_view second, E second_value) {
  if (text == first) return first_value;
  if (text == second) return second_value;
  throw UsageError("--" + std::string(flag) + " must be " + std::string(first) + " or " +
                   std::string(second) + ", got '" + std::string(text) + "'");
}

double parse_positive(std::string_view flag, std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v <= 0)
    throw UsageError("--" + std::string(flag) + ": expected a positive number, got '" +
                     std::string(text) + "'");
  return v;
}

std::array<std::int64_t, 3> parse_shape(std::string_view text) {
  std::array<std::int64_t, 3> shape{};
  std::size_t n = 0;
  while (true) {
    auto comma = text.find(',');
    if (n == shape.size()) throw UsageError("--shape: expected D,H,W, got more than three values");
    shape[n++] = parse_int("shape", text.substr(0, comma), 1);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (n != shape.size()) throw UsageError("--shape: expected D,H,W (three values)");
  return shape;
}

}  // namespace

Options parse_options(std::span<char* const> args) {
  Options o;
  bool have_dim = false;
  bool have_shape = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view word = args[i];
    if (word == "-h" || word == "--help") {
      o.help = true;
      continue;
    }
    if (!word.starts_with("--"))
      throw UsageError("unexpected argument '" + std::string(word) + "'");
    std::string_view name = word.substr(2);
    std::string_view value;
    if (auto eq = name.find('='); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      throw UsageError("--" + std::string(name) + " needs a value");
    }

    if (name == "batch-size") {
      o.batch_size = parse_int(name, value, 1);
    } else if (name == "dim") {
      auto d = parse_int(name, value, 1);
      o.shape = {d, d, d};
      have_dim = true;
    } else if (name == "shape") {
      o.shape = parse_shape(value);
      have_shape = true;
    } else if (name == "channels") {
      o.channels = parse_int(name, value, 1);
    } else if (name == "classes") {
      o.classes = parse_int(name, value, 1);
    } else if (name == "filters") {
      o.filters = parse_int(name, value, 1);
    } else if (name == "levels") {
      o.levels = parse_int(name, value, 1);
      // 2^(levels-1) must divide the shape; past 12 levels no volume that fits in memory does.
      if (o.levels > 12) throw UsageError("--levels must be at most 12, got " + std::string(value));
    } else if (name == "steps") {
      o.steps = parse_int(name, value, 0);
    } else if (name == "precision") {
      o.precision = parse_either(name, value, "fp32", Precision::fp32, "bf16", Precision::bf16);
    } else if (name == "device") {
      o.device = parse_either(name, value, "cpu", Device::cpu, "cuda", Device::cuda);
    } else if (name == "threads") {
      o.threads = parse_int(name, value, 0);
    } else if (name == "seed") {
      o.seed = static_cast<std::uint64_t>(parse_int(name, value, 0));
    } else if (name == "lr") {
      o.lr = parse_positive(name, value);
    } else if (name == "data") {
      if (value.empty()) throw UsageError("--data needs a directory");
      o.data_dir = std::string(value);
    } else {
      throw UsageError("unknown flag --" + std::string(name) + " (try --help)");
    }
  }
  if (have_dim && have_shape) throw UsageError("give --dim or --shape, not both");

  const std::int64_t stride = std::int64_t{1} << (o.levels - 1);
  for (auto edge : o.shape)
    if (edge % stride != 0)
      throw UsageError("the volume edge " + std::to_string(edge) + " is not divisible by " +
                       std::to_string(stride) + " = 2^(levels-1) with --levels " +
                       std::to_string(o.levels));
  // Batch normalisation in training needs more than one value per channel, and the lowest
  // level holds batch x (shape / 2^(levels-1)) of them.
  std::int64_t bottom = o.batch_size;
  for (auto edge : o.shape) bottom *= edge / stride;
  if (bottom < 2)
    throw UsageError("batch " + std::to_string(o.batch_size) +
                     " leaves one voxel per channel at "
                     "the lowest level, too few for batch normalisation: raise --batch-size or the "
                     "volume, or lower --levels");
  return o;
}

const char* usage_text() {
  return "usage: unet3d-train [flags]\n"
         "Trains the reference 3D U-net on synthetic BraTS-like volumes (or NIfTI volumes from\n"
         "--data) and prints a JSON summary as the last line on stdout.\n"
         "  --batch-size N        volumes per step (1)\n"
         "  --dim N | --shape D,H,W  volume edge or shape; divisible by 2^(levels-1) (64)\n"
         "  --channels N          input channels (4, the BraTS modalities)\n"
         "  --classes N           output classes (3, the tumour sub-regions)\n"
         "  --filters N           filters of the first level, doubled per level (16)\n"
         "  --levels N            levels, with N-1 max-pools (5)\n"
         "  --steps N             training steps (10)\n"
         "  --precision fp32|bf16 bf16 runs under autocast (fp32)\n"
         "  --device cpu|cuda     (cpu)\n"
         "  --threads N           LibTorch intra-op threads, 0 for its default (0)\n"
         "  --seed N              seed of the weights and the synthetic data (0)\n"
         "  --lr X                Adam learning rate (0.001)\n"
         "  --data DIR            NIfTI volumes: DIR/imagesTr/*.nii[.gz], DIR/labelsTr/ same "
         "names\n";
}

const char* to_string(Precision p) {
  return p == Precision::fp32 ? "fp32" : "bf16";
}
const char* to_string(Device d) {
  return d == Device::cpu ? "cpu" : "cuda";
}

}  // namespace unet3d
