// The NIfTI reader: files written here with Debian's NIfTI library, read back cropped, padded,
// normalised and one-hot.
#include "volumes.hpp"

#include <gtest/gtest.h>
#include <nifti1_io.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>

#include "process.hpp"

namespace {

namespace fs = std::filesystem;
using memwatch::test::TempDir;

// Writes an x-by-y-by-z(-by-t) volume of `datatype`; voxel (x, y, z, t) holds value(x, y, z, t).
void write_nifti(const fs::path& path, std::array<int, 4> size, int datatype,
                 const std::function<double(int, int, int, int)>& value) {
  int dims[8] = {size[3] > 1 ? 4 : 3, size[0], size[1], size[2], size[3], 1, 1, 1};
  nifti_image* nim = nifti_make_new_nim(dims, datatype, /*data_fill=*/1);
  ASSERT_NE(nim, nullptr);
  std::string name = path.string();
  ASSERT_EQ(nifti_set_filenames(nim, name.c_str(), /*check=*/0, /*set_byte_order=*/1), 0);
  std::size_t i = 0;
  for (int t = 0; t < size[3]; ++t)
    for (int z = 0; z < size[2]; ++z)
      for (int y = 0; y < size[1]; ++y)
        for (int x = 0; x < size[0]; ++x, ++i) {
          const double v = value(x, y, z, t);
          if (datatype == DT_INT16)
            static_cast<std::int16_t*>(nim->data)[i] = static_cast<std::int16_t>(v);
          else if (datatype == DT_UINT8)
            static_cast<std::uint8_t*>(nim->data)[i] = static_cast<std::uint8_t>(v);
          else
            static_cast<float*>(nim->data)[i] = static_cast<float>(v);
        }
  nifti_image_write(nim);
  nifti_image_free(nim);
}

void make_case(const fs::path& dir, const std::string& name, std::array<int, 4> size) {
  fs::create_directories(dir / "imagesTr");
  fs::create_directories(dir / "labelsTr");
  write_nifti(dir / "imagesTr" / name, size, DT_INT16,
              [](int x, int y, int z, int t) { return 100 * t + x + 2 * y + 3 * z; });
  // Label value 1 at x == 0, 2 at x == 1, 3 at x == 2, background elsewhere.
  write_nifti(dir / "labelsTr" / name, {size[0], size[1], size[2], 1}, DT_UINT8,
              [](int x, int, int, int) { return x < 3 ? x + 1 : 0; });
}

TEST(NiftiVolumes, ReadsCasesInNameOrderAndFitsThemToTheShape) {
  TempDir dir;
  make_case(dir.path(), "b.nii.gz", {6, 4, 2, 2});
  make_case(dir.path(), "a.nii", {6, 4, 2, 2});
  unet3d::NiftiVolumes volumes(dir.path());
  ASSERT_EQ(volumes.size(), 2u);

  // x 6 -> 4 is cropped by one each side; z 2 -> 4 is padded by one each side; y stays.
  auto c = volumes.load(0, {4, 4, 4}, /*channels=*/2, /*classes=*/3);
  ASSERT_EQ(c.image.channels, 2);
  ASSERT_EQ(c.label.channels, 3);
  EXPECT_EQ(c.image.shape, (std::array<std::int64_t, 3>{4, 4, 4}));
  ASSERT_EQ(c.image.values.size(), 2u * 64);
  ASSERT_EQ(c.label.values.size(), 3u * 64);

  auto at = [](const unet3d::Volume& v, std::int64_t ch, std::int64_t z, std::int64_t y,
               std::int64_t x) {
    return v.values[static_cast<std::size_t>(((ch * 4 + z) * 4 + y) * 4 + x)];
  };
  // Padding planes z = 0 and z = 3 hold no label; source x = 1 is output x = 0.
  for (std::int64_t k = 0; k < 3; ++k) EXPECT_EQ(at(c.label, k, 0, 0, 0), 0.0f);
  EXPECT_EQ(at(c.label, 1, 1, 0, 0), 1.0f);  // source label 2 -> class 1
  EXPECT_EQ(at(c.label, 2, 1, 0, 1), 1.0f);  // source label 3 -> class 2
  EXPECT_EQ(at(c.label, 0, 1, 0, 1), 0.0f);
  EXPECT_EQ(at(c.label, 0, 2, 3, 2), 0.0f);  // source x = 3 is background

  // Each modality is normalised to mean 0, deviation 1 over the fitted volume.
  for (std::int64_t ch = 0; ch < 2; ++ch) {
    double sum = 0, sq = 0;
    for (std::size_t i = 0; i < 64; ++i) {
      double v = c.image.values[static_cast<std::size_t>(ch) * 64 + i];
      sum += v, sq += v * v;
    }
    EXPECT_NEAR(sum / 64, 0.0, 1e-5);
    EXPECT_NEAR(sq / 64, 1.0, 1e-4);
  }
  // Voxels keep their order along x: the image increases with x inside the data.
  EXPECT_LT(at(c.image, 0, 1, 1, 0), at(c.image, 0, 1, 1, 1));
}

TEST(NiftiVolumes, RefusesMissingLabelsAndWrongChannels) {
  TempDir dir;
  EXPECT_THROW(unet3d::NiftiVolumes{dir.path()}, unet3d::DataError);
  make_case(dir.path(), "a.nii", {4, 4, 4, 2});
  unet3d::NiftiVolumes volumes(dir.path());
  EXPECT_THROW((void)volumes.load(0, {4, 4, 4}, /*channels=*/4, /*classes=*/3), unet3d::DataError);
  write_nifti(dir.file("imagesTr/z.nii"), {4, 4, 4, 2}, DT_FLOAT32,
              [](int, int, int, int) { return 1.0; });
  EXPECT_THROW(unet3d::NiftiVolumes{dir.path()}, unet3d::DataError);
}

}  // namespace
