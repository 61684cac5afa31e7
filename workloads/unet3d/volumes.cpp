#include "volumes.hpp"

#include <nifti1_io.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace unet3d {

namespace fs = std::filesystem;

namespace {

bool is_nifti(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.ends_with(".nii") || name.ends_with(".nii.gz");
}

struct NiftiFree {
  void operator()(nifti_image* nim) const { nifti_image_free(nim); }
};
using NiftiPtr = std::unique_ptr<nifti_image, NiftiFree>;

// The raw file as C x D x H x W floats, whatever its voxel type; D, H, W are NIfTI's z, y, x.
Volume read_nifti(const fs::path& path) {
  NiftiPtr nim(nifti_image_read(path.c_str(), /*read_data=*/1));
  if (!nim || !nim->data) throw DataError("cannot read NIfTI file " + path.string());
  if (nim->ndim > 4) throw DataError(path.string() + ": more than four dimensions");
  Volume v;
  v.channels = nim->ndim == 4 ? nim->nt : 1;
  v.shape = {std::max(nim->nz, 1), std::max(nim->ny, 1), std::max(nim->nx, 1)};
  const std::size_t n = static_cast<std::size_t>(v.channels * v.shape[0] * v.shape[1] * v.shape[2]);
  v.values.resize(n);
  auto copy = [&](auto* src) {
    for (std::size_t i = 0; i < n; ++i) v.values[i] = static_cast<float>(src[i]);
  };
  // One line a voxel type.
  // clang-format off
  switch (nim->datatype) {
    case DT_UINT8: copy(static_cast<const std::uint8_t*>(nim->data)); break;
    case DT_INT8: copy(static_cast<const std::int8_t*>(nim->data)); break;
    case DT_INT16: copy(static_cast<const std::int16_t*>(nim->data)); break;
    case DT_UINT16: copy(static_cast<const std::uint16_t*>(nim->data)); break;
    case DT_INT32: copy(static_cast<const std::int32_t*>(nim->data)); break;
    case DT_UINT32: copy(static_cast<const std::uint32_t*>(nim->data)); break;
    case DT_FLOAT32: copy(static_cast<const float*>(nim->data)); break;
    case DT_FLOAT64: copy(static_cast<const double*>(nim->data)); break;
    default:
      throw DataError(path.string() + ": unsupported voxel type " +
                      nifti_datatype_string(nim->datatype));
  }
  // clang-format on
  // A slope of 0 means "no scaling" in NIfTI-1.
  if (nim->scl_slope != 0.0f && (nim->scl_slope != 1.0f || nim->scl_inter != 0.0f))
    for (auto& x : v.values) x = x * nim->scl_slope + nim->scl_inter;
  return v;
}

// Centre crop where the source is larger, zero padding where it is smaller, per axis.
Volume fit_to(const Volume& src, const std::array<std::int64_t, 3>& shape) {
  Volume out;
  out.channels = src.channels;
  out.shape = shape;
  out.values.assign(static_cast<std::size_t>(src.channels * shape[0] * shape[1] * shape[2]), 0.0f);
  std::array<std::int64_t, 3> src_off{}, dst_off{}, len{};
  for (int a = 0; a < 3; ++a) {
    const auto s = src.shape[a], d = shape[a];
    src_off[a] = s > d ? (s - d) / 2 : 0;
    dst_off[a] = d > s ? (d - s) / 2 : 0;
    len[a] = std::min(s, d);
  }
  for (std::int64_t c = 0; c < src.channels; ++c)
    for (std::int64_t z = 0; z < len[0]; ++z)
      for (std::int64_t y = 0; y < len[1]; ++y) {
        const auto si =
            ((c * src.shape[0] + z + src_off[0]) * src.shape[1] + y + src_off[1]) * src.shape[2] +
            src_off[2];
        const auto di =
            ((c * shape[0] + z + dst_off[0]) * shape[1] + y + dst_off[1]) * shape[2] + dst_off[2];
        std::copy_n(src.values.begin() + si, len[2], out.values.begin() + di);
      }
  return out;
}

void normalise_channels(Volume& v) {
  const auto per = static_cast<std::size_t>(v.shape[0] * v.shape[1] * v.shape[2]);
  for (std::int64_t c = 0; c < v.channels; ++c) {
    auto first = v.values.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c) * per);
    double sum = 0, sq = 0;
    for (std::size_t i = 0; i < per; ++i) sum += first[static_cast<std::ptrdiff_t>(i)];
    const double mean = sum / static_cast<double>(per);
    for (std::size_t i = 0; i < per; ++i) {
      const double d = first[static_cast<std::ptrdiff_t>(i)] - mean;
      sq += d * d;
    }
    const double sd = std::sqrt(sq / static_cast<double>(per));
    const double scale = sd > 0 ? 1.0 / sd : 1.0;
    for (std::size_t i = 0; i < per; ++i) {
      auto& x = first[static_cast<std::ptrdiff_t>(i)];
      x = static_cast<float>((x - mean) * scale);
    }
  }
}

}  // namespace

NiftiVolumes::NiftiVolumes(const fs::path& dir) {
  const fs::path images = dir / "imagesTr", labels = dir / "labelsTr";
  std::error_code ec;
  if (!fs::is_directory(images, ec) || !fs::is_directory(labels, ec))
    throw DataError(dir.string() + ": expected the folders imagesTr/ and labelsTr/");
  for (const auto& entry : fs::directory_iterator(images)) {
    // Files beginning with a dot are macOS resource forks that some copies of BraTS carry.
    if (!entry.is_regular_file() || !is_nifti(entry.path()) ||
        entry.path().filename().string().starts_with("."))
      continue;
    images_.push_back(entry.path());
  }
  std::sort(images_.begin(), images_.end());
  if (images_.empty()) throw DataError(images.string() + ": no .nii or .nii.gz files");
  for (const auto& image : images_) {
    fs::path label = labels / image.filename();
    if (!fs::is_regular_file(label, ec))
      throw DataError("no label for " + image.string() + " (expected " + label.string() + ")");
    labels_.push_back(std::move(label));
  }
}

Case NiftiVolumes::load(std::size_t index, const std::array<std::int64_t, 3>& shape,
                        std::int64_t channels, std::int64_t classes) const {
  const auto& image_path = images_.at(index);
  Volume image = read_nifti(image_path);
  if (image.channels != channels)
    throw DataError(image_path.string() + " has " + std::to_string(image.channels) +
                    " modalities, --channels is " + std::to_string(channels));
  Volume raw_label = read_nifti(labels_[index]);
  if (raw_label.shape != image.shape)
    throw DataError(labels_[index].string() + ": its shape differs from the image's");

  Volume label;
  label.shape = raw_label.shape;
  label.channels = classes;
  if (raw_label.channels == classes && classes > 1) {
    label.values = std::move(raw_label.values);
    for (auto& x : label.values) x = x > 0.5f ? 1.0f : 0.0f;
  } else if (raw_label.channels == 1) {
    const auto per = raw_label.values.size();
    label.values.assign(per * static_cast<std::size_t>(classes), 0.0f);
    for (std::size_t i = 0; i < per; ++i) {
      const auto k = static_cast<std::int64_t>(std::lround(raw_label.values[i]));
      if (k >= 1 && k <= classes) label.values[static_cast<std::size_t>(k - 1) * per + i] = 1.0f;
    }
  } else {
    throw DataError(labels_[index].string() + " has " + std::to_string(raw_label.channels) +
                    " volumes; expected 1 (label values) or --classes");
  }

  Case c{fit_to(image, shape), fit_to(label, shape)};
  normalise_channels(c.image);
  return c;
}

}  // namespace unet3d
