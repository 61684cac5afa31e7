// The trainer's command line: parsed and checked before LibTorch is touched, so a bad flag costs
// nothing and always gives one message and exit status 2.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace unet3d {

enum class Precision { fp32, bf16 };
enum class Device { cpu, cuda };

struct Options {
  std::int64_t batch_size = 1;
  std::array<std::int64_t, 3> shape{64, 64, 64};  // D, H, W
  std::int64_t channels = 4;                      // the BraTS modalities
  std::int64_t classes = 3;                       // the tumour sub-regions
  std::int64_t filters = 16;
  std::int64_t levels = 5;
  std::int64_t steps = 10;
  Precision precision = Precision::fp32;
  Device device = Device::cpu;
  std::int64_t threads = 0;  // 0 keeps LibTorch's own choice
  std::uint64_t seed = 0;
  double lr = 1e-3;
  std::optional<std::string> data_dir;  // NIfTI volumes; synthetic ones when absent
  bool help = false;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws UsageError with a message meant for the user; `cuda` support is checked by the caller,
// which alone knows what LibTorch was built with.
Options parse_options(std::span<char* const> args);

const char* usage_text();
const char* to_string(Precision p);
const char* to_string(Device d);

}  // namespace unet3d
