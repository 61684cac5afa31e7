// unet3d-train: the reference 3D U-net of the founding study, trained for real with LibTorch.
// It knows nothing of memwatch; memwatch measures it from outside.
//
// Everything that includes LibTorch lives in this one file, because each such translation unit
// takes minutes to compile.
#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "volumes.hpp"

namespace unet3d {

namespace nn = torch::nn;
using torch::Tensor;

// Two 3x3x3 convolutions, each followed by batch normalisation and ReLU: one level's block.
struct DoubleConvImpl : nn::Module {
  DoubleConvImpl(std::int64_t in, std::int64_t out)
      : conv1(register_module("conv1", nn::Conv3d(nn::Conv3dOptions(in, out, 3).padding(1)))),
        norm1(register_module("norm1", nn::BatchNorm3d(out))),
        conv2(register_module("conv2", nn::Conv3d(nn::Conv3dOptions(out, out, 3).padding(1)))),
        norm2(register_module("norm2", nn::BatchNorm3d(out))) {}

  Tensor forward(Tensor x) {
    x = torch::relu(norm1(conv1(x)));
    return torch::relu(norm2(conv2(x)));
  }

  nn::Conv3d conv1;
  nn::BatchNorm3d norm1;
  nn::Conv3d conv2;
  nn::BatchNorm3d norm2;
};
TORCH_MODULE(DoubleConv);

struct UNet3dImpl : nn::Module {
  UNet3dImpl(std::int64_t channels, std::int64_t classes, std::int64_t filters,
             std::int64_t levels) {
    std::vector<std::int64_t> width;
    for (std::int64_t i = 0; i < levels; ++i) width.push_back(filters << i);
    for (std::int64_t i = 0; i < levels; ++i) {
      const auto in = i == 0 ? channels : width[static_cast<std::size_t>(i - 1)];
      encoder.push_back(register_module("enc" + std::to_string(i),
                                        DoubleConv(in, width[static_cast<std::size_t>(i)])));
    }
    // Decoder level i takes the level below (i+1) up to level i's resolution and filters.
    for (std::int64_t i = 0; i + 1 < levels; ++i) {
      const auto w = width[static_cast<std::size_t>(i)];
      const auto below = width[static_cast<std::size_t>(i + 1)];
      up.push_back(
          register_module("up" + std::to_string(i),
                          nn::ConvTranspose3d(nn::ConvTranspose3dOptions(below, w, 2).stride(2))));
      decoder.push_back(register_module("dec" + std::to_string(i), DoubleConv(2 * w, w)));
    }
    head = register_module("head", nn::Conv3d(nn::Conv3dOptions(width[0], classes, 1)));
  }

  Tensor forward(Tensor x) {
    std::vector<Tensor> skips;
    x = encoder[0]->forward(x);
    for (std::size_t i = 1; i < encoder.size(); ++i) {
      skips.push_back(x);
      x = encoder[i]->forward(torch::max_pool3d(x, 2));
    }
    for (std::size_t i = decoder.size(); i-- > 0;) {
      x = up[i]->forward(x);
      x = decoder[i]->forward(torch::cat({skips[i], x}, 1));
    }
    return torch::sigmoid(head->forward(x));
  }

  std::vector<DoubleConv> encoder;
  std::vector<nn::ConvTranspose3d> up;
  std::vector<DoubleConv> decoder;
  nn::Conv3d head{nullptr};
};
TORCH_MODULE(UNet3d);

struct Batch {
  Tensor image;  // B x channels x D x H x W
  Tensor label;  // B x classes x D x H x W, 0 or 1
};

// A smooth random field: Gaussian noise on a coarse grid, trilinearly interpolated.
Tensor smooth_field(std::int64_t batch, std::int64_t channels,
                    const std::array<std::int64_t, 3>& s) {
  std::vector<std::int64_t> coarse{batch, channels};
  for (auto edge : s) coarse.push_back(std::max<std::int64_t>(2, edge / 8));
  return torch::nn::functional::interpolate(torch::randn(coarse),
                                            torch::nn::functional::InterpolateFuncOptions()
                                                .size(std::vector<std::int64_t>(s.begin(), s.end()))
                                                .mode(torch::kTrilinear)
                                                .align_corners(false));
}

// BraTS-like volumes: each sample holds one tumour made of nested, irregular blobs (class c is
// the blob of radius shrinking with c, as enhancing core sits in tumour core in whole tumour),
// and each modality is a smooth background plus a class-dependent contrast inside the blobs.
Batch synthetic_batch(const Options& o) {
  const auto [d, h, w] = o.shape;
  const auto B = o.batch_size;
  auto axis = [](std::int64_t n) { return (torch::arange(n, torch::kFloat) + 0.5) / n; };
  auto z = axis(d).view({1, d, 1, 1});
  auto y = axis(h).view({1, 1, h, 1});
  auto x = axis(w).view({1, 1, 1, w});
  auto centre = torch::rand({3, B, 1, 1, 1}) * 0.5 + 0.25;
  auto radius = torch::rand({3, B, 1, 1, 1}) * 0.15 + 0.1;
  auto dist = ((z - centre[0]) / radius[0]).square() + ((y - centre[1]) / radius[1]).square() +
              ((x - centre[2]) / radius[2]).square();
  // The distortion makes blobs rather than ellipsoids.
  auto blob = dist.sqrt() + 0.3 * smooth_field(B, 1, o.shape).squeeze(1);  // B x D x H x W

  std::vector<Tensor> classes;
  for (std::int64_t c = 0; c < o.classes; ++c) {
    const double r = 1.0 - 0.6 * static_cast<double>(c) / static_cast<double>(o.classes);
    classes.push_back((blob < r).to(torch::kFloat));
  }
  auto label = torch::stack(classes, 1);

  auto contrast = torch::rand({1, o.channels, o.classes}) * 1.5 + 0.5;
  auto image = smooth_field(B, o.channels, o.shape) +
               torch::einsum("bkdhw,mck->bcdhw", {label, contrast.expand({1, o.channels, o.classes})
                                                             .reshape({o.channels, o.classes})
                                                             .unsqueeze(0)})
                   .squeeze(0);
  return {image, label};
}

Batch nifti_batch(const Options& o, const NiftiVolumes& volumes, std::int64_t step) {
  std::vector<Tensor> images, labels;
  for (std::int64_t b = 0; b < o.batch_size; ++b) {
    const auto index = static_cast<std::size_t>(step * o.batch_size + b) % volumes.size();
    Case c = volumes.load(index, o.shape, o.channels, o.classes);
    auto to_tensor = [](Volume& v) {
      return torch::from_blob(v.values.data(), {v.channels, v.shape[0], v.shape[1], v.shape[2]},
                              torch::kFloat)
          .clone();
    };
    images.push_back(to_tensor(c.image));
    labels.push_back(to_tensor(c.label));
  }
  return {torch::stack(images), torch::stack(labels)};
}

// Soft Dice over each class (summed over the batch and the volume) plus binary cross-entropy.
Tensor dice_bce_loss(const Tensor& prob, const Tensor& target) {
  const std::vector<std::int64_t> dims{0, 2, 3, 4};
  auto inter = (prob * target).sum(dims);
  auto total = prob.sum(dims) + target.sum(dims);
  auto dice = 1.0 - ((2.0 * inter + 1.0) / (total + 1.0)).mean();
  return dice + torch::binary_cross_entropy(prob, target);
}

std::int64_t count_parameters(UNet3d& model) {
  std::int64_t n = 0;
  for (const auto& p : model->parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

std::string json_number(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", *v);
  return buf;
}

int train(const Options& o) {
  const auto start = std::chrono::steady_clock::now();
  auto seconds_since = [](auto t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  if (o.threads > 0) torch::set_num_threads(static_cast<int>(o.threads));
  torch::manual_seed(o.seed);
  const torch::Device device = o.device == Device::cuda ? torch::kCUDA : torch::kCPU;

  std::optional<NiftiVolumes> volumes;
  if (o.data_dir) volumes.emplace(*o.data_dir);

  UNet3d model(o.channels, o.classes, o.filters, o.levels);
  model->to(device);
  model->train();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(o.lr));
  const bool bf16 = o.precision == Precision::bf16;

  std::optional<double> first_loss, final_loss;
  const auto train_start = std::chrono::steady_clock::now();
  for (std::int64_t step = 0; step < o.steps; ++step) {
    const auto step_start = std::chrono::steady_clock::now();
    Batch batch = volumes ? nifti_batch(o, *volumes, step) : synthetic_batch(o);
    auto image = batch.image.to(device);
    auto label = batch.label.to(device);

    optimizer.zero_grad();
    Tensor prob;
    if (bf16) {
      // Autocast keeps fp32 master weights and runs the convolutions in bf16.
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
      if (o.device == Device::cuda)
        at::autocast::set_enabled(true);
      else
        at::autocast::set_cpu_enabled(true);
      prob = model->forward(image);
      at::autocast::set_enabled(false);
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
      prob = prob.to(torch::kFloat);
    } else {
      prob = model->forward(image);
    }
    auto loss = dice_bce_loss(prob, label);
    loss.backward();
    optimizer.step();

    const double value = loss.item<double>();
    if (!first_loss) first_loss = value;
    final_loss = value;
    std::printf("step %lld/%lld loss %.5f %.3f s\n", static_cast<long long>(step + 1),
                static_cast<long long>(o.steps), value, seconds_since(step_start));
    std::fflush(stdout);
  }
  const double train_s = seconds_since(train_start);

  std::printf(
      "{\"workload\":\"unet3d-train\",\"parameters\":%lld,\"steps\":%lld,\"batch_size\":%lld,"
      "\"shape\":[%lld,%lld,%lld],\"channels\":%lld,\"classes\":%lld,\"filters\":%lld,"
      "\"levels\":%lld,\"precision\":\"%s\",\"device\":\"%s\",\"threads\":%d,\"seed\":%llu,"
      "\"data\":\"%s\",\"first_loss\":%s,\"final_loss\":%s,\"step_s\":%s,\"elapsed_s\":%s}\n",
      static_cast<long long>(count_parameters(model)), static_cast<long long>(o.steps),
      static_cast<long long>(o.batch_size), static_cast<long long>(o.shape[0]),
      static_cast<long long>(o.shape[1]), static_cast<long long>(o.shape[2]),
      static_cast<long long>(o.channels), static_cast<long long>(o.classes),
      static_cast<long long>(o.filters), static_cast<long long>(o.levels), to_string(o.precision),
      to_string(o.device), torch::get_num_threads(), static_cast<unsigned long long>(o.seed),
      volumes ? "nifti" : "synthetic", json_number(first_loss).c_str(),
      json_number(final_loss).c_str(),
      json_number(o.steps > 0 ? std::optional(train_s / static_cast<double>(o.steps))
                              : std::nullopt)
          .c_str(),
      json_number(seconds_since(start)).c_str());
  return 0;
}

}  // namespace unet3d

int main(int argc, char** argv) {
  unet3d::Options options;
  try {
    options =
        unet3d::parse_options(std::span<char* const>(argv + 1, static_cast<std::size_t>(argc - 1)));
    if (options.device == unet3d::Device::cuda && !torch::cuda::is_available())
      throw unet3d::UsageError(
          "--device cuda: this LibTorch has no CUDA (built without it, or no GPU is visible)");
  } catch (const unet3d::UsageError& e) {
    std::fprintf(stderr, "unet3d-train: %s\n", e.what());
    return 2;
  }
  if (options.help) {
    std::fputs(unet3d::usage_text(), stdout);
    return 0;
  }
  try {
    return unet3d::train(options);
  } catch (const unet3d::DataError& e) {
    std::fprintf(stderr, "unet3d-train: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unet3d-train: error: %s\n", e.what());
    return 1;
  }
}
