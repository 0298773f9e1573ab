#include "ondisk/global_checksum.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device/compare_host.h"

namespace ckptspec {
namespace {

// The whole tensor's checksum as the device checks compute it (their CPU twin).
uint64_t DeviceChecksum(const std::vector<float>& values, const Dims& shape) {
  ckptspec_compare_options o = {};
  o.dtype = CKPTSPEC_DTYPE_FP32;
  ckptspec_shard_geometry g = {};
  g.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) g.global_shape[i] = g.local_shape[i] = shape[i];
  ckptspec_compare_report r;
  EXPECT_TRUE(device::CompareHostBuffers(values.data(), values.data(), g, o, &r).ok());
  return r.actual_checksum;
}

RC_GTEST_PROP(ChunkChecksum, ChunksOfAnySplitAddUpToTheDeviceChecksum, ()) {
  const int64_t rows = *rc::gen::inRange<int64_t>(1, 9);
  const int64_t cols = *rc::gen::inRange<int64_t>(1, 9);
  const Dims shape{rows, cols};
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (float& v : values) v = static_cast<float>(*rc::gen::inRange(-1000, 1000)) / 7.0f;
  // Split the rows at one point and the columns at another: four chunks (some maybe empty).
  const int64_t r = *rc::gen::inRange<int64_t>(0, rows + 1);
  const int64_t c = *rc::gen::inRange<int64_t>(0, cols + 1);
  uint64_t sum = 0;
  for (const Box& box : {Box{{0, 0}, {r, c}}, Box{{0, c}, {r, cols - c}},
                         Box{{r, 0}, {rows - r, c}}, Box{{r, c}, {rows - r, cols - c}}}) {
    std::string bytes;
    for (int64_t i = 0; i < box.shape[0]; ++i) {
      for (int64_t j = 0; j < box.shape[1]; ++j) {
        const float v = values[static_cast<size_t>((box.offset[0] + i) * cols + box.offset[1] + j)];
        bytes.append(reinterpret_cast<const char*>(&v), sizeof(v));
      }
    }
    ChunkChecksum checksum(shape, box, sizeof(float));
    // Fed in pieces that split elements.
    size_t at = 0;
    while (at < bytes.size()) {
      const size_t n = std::min(bytes.size() - at, *rc::gen::inRange<size_t>(1, 11));
      checksum.Update(bytes.data() + at, n);
      at += n;
    }
    sum += checksum.value();
  }
  RC_ASSERT(sum == DeviceChecksum(values, shape));
}

TEST(ChunkChecksum, AScalarIsOneElementAtIndexZero) {
  const float v = 1.5f;
  ChunkChecksum checksum(Dims{}, Box{}, sizeof(float));
  checksum.Update(&v, sizeof(v));
  EXPECT_EQ(checksum.value(), DeviceChecksum({v}, Dims{}));
}

}  // namespace
}  // namespace ckptspec
