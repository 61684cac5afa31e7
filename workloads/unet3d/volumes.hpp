// Training volumes from NIfTI files, laid out as the Medical Segmentation Decathlon lays out
// BraTS: DIR/imagesTr/NAME.nii[.gz] (x, y, z, modality) and DIR/labelsTr/NAME.nii[.gz] (x, y, z
// with integer labels, 0 the background). Kept free of LibTorch so it compiles fast and tests
// link it alone.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace unet3d {

struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// C x D x H x W floats, row-major: W (NIfTI's x) varies fastest.
struct Volume {
  std::int64_t channels = 0;
  std::array<std::int64_t, 3> shape{};
  std::vector<float> values;
};

struct Case {
  Volume image;  // `channels` modalities, each normalised to mean 0, deviation 1
  Volume label;  // `classes` channels of 0/1: channel c marks label value c+1
};

class NiftiVolumes {
 public:
  // Lists the cases; throws DataError when the directory holds none or a label is missing.
  explicit NiftiVolumes(const std::filesystem::path& dir);

  [[nodiscard]] std::size_t size() const { return images_.size(); }

  // Reads case `index`, centre-cropped or zero-padded to `shape` (D, H, W). A label file with
  // `classes` volumes in its fourth dimension is taken as given, one volume per class.
  [[nodiscard]] Case load(std::size_t index, const std::array<std::int64_t, 3>& shape,
                          std::int64_t channels, std::int64_t classes) const;

 private:
  std::vector<std::filesystem::path> images_;
  std::vector<std::filesystem::path> labels_;
};

}  // namespace unet3d
