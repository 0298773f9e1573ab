// Tests of the CUDA device checks (compare_cuda.h): on random buffers, planted mismatches of every
// class, sharded geometries and misaligned pointers, the GPU report must equal the CPU twin's bit
// for bit. Every test skips, visibly, when no CUDA device is present.
#include "device/compare_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "device/compare_host.h"
#include "device/test_util.h"
#include "model/content.h"
#include "model/content_fill.h"

namespace ckptspec {
namespace device {
namespace {

using testing::ElementBuffer;
using testing::HasInfinity;
using testing::MakeGeometry;
using testing::Options;
using testing::SameReport;

#define SKIP_WITHOUT_CUDA_DEVICE() \
  if (!CudaDevicePresent()) GTEST_SKIP() << "no CUDA device"

// A device copy of a host buffer, placed `shift` elements into the allocation (shift > 0 makes
// the pointer not 16-byte aligned, exercising the scalar kernel).
class DeviceCopy {
 public:
  DeviceCopy(const ElementBuffer& host, int shift) {
    const size_t elem = DTypeSize(host.dtype());
    EXPECT_EQ(cudaMalloc(&base_, host.size_bytes() + 16), cudaSuccess);
    data_ = static_cast<uint8_t*>(base_) + shift * elem;
    EXPECT_EQ(cudaMemcpy(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(base_); }
  const void* data() const { return data_; }

 private:
  void* base_ = nullptr;
  uint8_t* data_ = nullptr;
};

void ExpectSameOnBoth(const ElementBuffer& actual, const ElementBuffer& expected,
                      const ckptspec_shard_geometry& g, const ckptspec_compare_options& o,
                      int shift) {
  ckptspec_compare_report cpu, gpu, cpu_generated, gpu_generated;
  ASSERT_TRUE(CompareHostBuffers(actual.data(), expected.data(), g, o, &cpu).ok());
  DeviceCopy da(actual, shift), de(expected, shift);
  const Status s = CompareDeviceBuffers(da.data(), de.data(), g, o, &gpu);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(SameReport(cpu, gpu)) << "cpu " << cpu << "\ngpu " << gpu;
  ASSERT_TRUE(CompareHostGenerated(actual.data(), 3, 4, g, o, &cpu_generated).ok());
  ASSERT_TRUE(CompareDeviceGenerated(da.data(), 3, 4, g, o, &gpu_generated).ok());
  EXPECT_TRUE(SameReport(cpu_generated, gpu_generated))
      << "cpu " << cpu_generated << "\ngpu " << gpu_generated;
}

class CudaCompareTest : public ::testing::TestWithParam<DType> {};

TEST_P(CudaCompareTest, RandomBuffersMatchTheCpuTwin) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const DType d = GetParam();
  std::mt19937_64 rng(17 + static_cast<int>(d));
  for (const int64_t n : {int64_t{1}, int64_t{37}, int64_t{4096}, int64_t{1} << 20}) {
    ElementBuffer a(d, n), e(d, n);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t bits = rng();
      e.Set(i, bits);
      a.Set(i, (i % 3 == 0) ? bits : (i % 3 == 1 ? bits ^ 1 : rng()));
    }
    for (int mode = 0; mode < 3; ++mode) {
      ckptspec_compare_options o = Options(d, mode);
      o.max_ulp = 1;
      o.rtol = 1e-2;
      o.atol = 1e-5;
      o.equal_nan = mode == 2;
      for (int shift : {0, 1}) ExpectSameOnBoth(a, e, testing::FlatGeometry(n), o, shift);
    }
  }
}

TEST_P(CudaCompareTest, PlantedMismatchesInAShardMatchTheCpuTwin) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const DType d = GetParam();
  const Dims global{12, 40, 70};
  const Box local{{4, 8, 3}, {6, 20, 61}};
  ElementBuffer e(d, Volume(local.shape));
  FillContent(d, 3, 4, global, local, e.data());
  ElementBuffer a = e;
  a.Set(5000, testing::ValueBits(d, IsFloatingDType(d) ? 0.75f : 7.0f));
  if (IsFloatingDType(d)) {
    a.Set(4000, testing::NaNBits(d));
    if (HasInfinity(d)) a.Set(3000, testing::InfBits(d));
    e.Set(2000, 0);
    a.Set(2000, testing::NegZeroBits(d));
  }
  for (int mode = 0; mode < 3; ++mode) {
    ExpectSameOnBoth(a, e, MakeGeometry(global, local), Options(d, mode), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, CudaCompareTest, ::testing::ValuesIn(kAllDTypes),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

TEST(CudaCompareErrorsTest, HostPointerIsRejected) {
  SKIP_WITHOUT_CUDA_DEVICE();
  float host[4] = {};
  ckptspec_compare_report r;
  const Status s =
      CompareDeviceBuffers(host, host, testing::FlatGeometry(4), Options(DType::kFloat32), &r);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
}

TEST(CudaCompareErrorsTest, NoDeviceIsReported) {
  if (CudaDevicePresent()) GTEST_SKIP() << "a CUDA device is present";
  float host[4] = {};
  ckptspec_compare_report r;
  const Status s =
      CompareDeviceBuffers(host, host, testing::FlatGeometry(4), Options(DType::kFloat32), &r);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "no CUDA device");
}

}  // namespace
}  // namespace device
}  // namespace ckptspec
