// Tests of the C ABI (libckptspec_device.so): error codes and messages, helpers, and that the host
// entry points report what the C++ twin reports.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "device/ckptspec_device.h"
#include "device/test_util.h"
#include "model/content.h"
#include "model/content_fill.h"

namespace ckptspec {
namespace device {
namespace {

using testing::ElementBuffer;
using testing::FlatGeometry;
using testing::MakeGeometry;

std::string LastError() { return ckptspec_device_last_error(); }

TEST(CApiTest, OptionsInitUsesTorchDefaults) {
  ckptspec_compare_options o;
  ASSERT_EQ(ckptspec_compare_options_init(CKPTSPEC_DTYPE_BF16, &o), CKPTSPEC_OK);
  EXPECT_EQ(o.mode, CKPTSPEC_COMPARE_BITWISE);
  EXPECT_EQ(o.rtol, 1.6e-2);
  EXPECT_EQ(o.atol, 1e-5);
  EXPECT_EQ(o.threads, 0);
  double rtol, atol;
  ASSERT_EQ(ckptspec_default_tolerances(CKPTSPEC_DTYPE_FP32, &rtol, &atol), CKPTSPEC_OK);
  EXPECT_EQ(rtol, 1.3e-6);
  EXPECT_EQ(atol, 1e-5);
  ASSERT_EQ(ckptspec_default_tolerances(CKPTSPEC_DTYPE_FP16, &rtol, &atol), CKPTSPEC_OK);
  EXPECT_EQ(rtol, 1e-3);
  EXPECT_EQ(atol, 1e-5);
  for (int d : {CKPTSPEC_DTYPE_FP8_E4M3, CKPTSPEC_DTYPE_FP8_E5M2, CKPTSPEC_DTYPE_INT32,
                CKPTSPEC_DTYPE_INT64}) {
    ASSERT_EQ(ckptspec_default_tolerances(d, &rtol, &atol), CKPTSPEC_OK);
    EXPECT_EQ(rtol, 0.0);
    EXPECT_EQ(atol, 0.0);
  }
}

TEST(CApiTest, BadArgumentsReturnCodesAndMessages) {
  EXPECT_EQ(ckptspec_compare_options_init(CKPTSPEC_DTYPE_FP32, nullptr), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("options is null"), std::string::npos) << LastError();
  ckptspec_compare_options o;
  EXPECT_EQ(ckptspec_compare_options_init(42, &o), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("dtype 42"), std::string::npos) << LastError();
  EXPECT_EQ(ckptspec_compare_options_init(-1, &o), CKPTSPEC_INVALID_ARGUMENT);

  ASSERT_EQ(ckptspec_compare_options_init(CKPTSPEC_DTYPE_FP32, &o), CKPTSPEC_OK);
  EXPECT_EQ(LastError(), "");  // success clears the message
  ckptspec_shard_geometry g;
  ASSERT_EQ(ckptspec_geometry_flat(4, &g), CKPTSPEC_OK);
  float a[4] = {1, 2, 3, 4};
  ckptspec_compare_report r;
  EXPECT_EQ(ckptspec_compare_host_buffers(a, a, nullptr, &o, &r), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("geometry is null"), std::string::npos);
  EXPECT_EQ(ckptspec_compare_host_buffers(a, a, &g, nullptr, &r), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("options is null"), std::string::npos);
  EXPECT_EQ(ckptspec_compare_host_buffers(a, a, &g, &o, nullptr), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("report is null"), std::string::npos);
  EXPECT_EQ(ckptspec_compare_host_buffers(nullptr, a, &g, &o, &r), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("actual buffer is null"), std::string::npos);
  EXPECT_EQ(ckptspec_compare_host_generated(nullptr, 1, 2, &g, &o, &r), CKPTSPEC_INVALID_ARGUMENT);
  o.dtype = 9;
  EXPECT_EQ(ckptspec_compare_host_buffers(a, a, &g, &o, &r), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("dtype 9"), std::string::npos);
  EXPECT_EQ(ckptspec_geometry_flat(-3, &g), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("count -3"), std::string::npos);
  uint64_t h;
  EXPECT_EQ(ckptspec_key_hash(nullptr, 3, &h), CKPTSPEC_INVALID_ARGUMENT);
  EXPECT_EQ(ckptspec_key_hash("k", 1, nullptr), CKPTSPEC_INVALID_ARGUMENT);
}

TEST(CApiTest, KeyHashAndChecksumCombine) {
  uint64_t h = 0;
  const std::string key = "optimizer.state.3.exp_avg";
  ASSERT_EQ(ckptspec_key_hash(key.data(), key.size(), &h), CKPTSPEC_OK);
  EXPECT_EQ(h, KeyHash(key));
  EXPECT_EQ(ckptspec_checksum_combine(~uint64_t{0}, 2), 1u);
}

TEST(CApiTest, HostGeneratedFindsThePlantedMismatchInAShard) {
  const DType d = DType::kBFloat16;
  const Dims global{16, 32};
  const Box local{{8, 16}, {8, 16}};
  ElementBuffer actual(d, Volume(local.shape));
  uint64_t key;
  ASSERT_EQ(ckptspec_key_hash("w", 1, &key), CKPTSPEC_OK);
  FillContent(d, 5, key, global, local, actual.data());
  actual.Set(37, testing::NaNBits(d));  // local (2, 5) -> global (10, 21)
  const ckptspec_shard_geometry g = MakeGeometry(global, local);
  ckptspec_compare_options o;
  ASSERT_EQ(ckptspec_compare_options_init(CKPTSPEC_DTYPE_BF16, &o), CKPTSPEC_OK);
  ckptspec_compare_report r;
  ASSERT_EQ(ckptspec_compare_host_generated(actual.data(), 5, key, &g, &o, &r), CKPTSPEC_OK);
  EXPECT_EQ(r.nan_mismatches, 1u);
  EXPECT_EQ(r.mismatch_count, 1u);
  EXPECT_EQ(r.first_mismatch_index, 37);
  EXPECT_EQ(r.first_mismatch_coord[0], 10);
  EXPECT_EQ(r.first_mismatch_coord[1], 21);
  EXPECT_EQ(r.first_mismatch_global_index, 10 * 32 + 21);
  // Against the matching buffer the report is the same.
  ElementBuffer expected(d, Volume(local.shape));
  FillContent(d, 5, key, global, local, expected.data());
  ckptspec_compare_report b;
  ASSERT_EQ(ckptspec_compare_host_buffers(actual.data(), expected.data(), &g, &o, &b), CKPTSPEC_OK);
  EXPECT_TRUE(testing::SameReport(r, b));
}

TEST(CApiTest, DeviceEntryPointsFailCleanlyWithoutADevice) {
  if (ckptspec_cuda_device_present()) GTEST_SKIP() << "a CUDA device is present";
  ckptspec_compare_options o;
  ASSERT_EQ(ckptspec_compare_options_init(CKPTSPEC_DTYPE_FP32, &o), CKPTSPEC_OK);
  ckptspec_shard_geometry g;
  ASSERT_EQ(ckptspec_geometry_flat(4, &g), CKPTSPEC_OK);
  float a[4] = {};
  ckptspec_compare_report r;
  EXPECT_EQ(ckptspec_compare_device_buffers(a, a, &g, &o, &r), CKPTSPEC_NO_CUDA);
  EXPECT_NE(LastError().find(ckptspec_cuda_built() ? "no CUDA device" : "built without CUDA"),
            std::string::npos)
      << LastError();
  EXPECT_EQ(ckptspec_compare_device_generated(a, 1, 2, &g, &o, &r), CKPTSPEC_NO_CUDA);
  EXPECT_EQ(ckptspec_compare_device_buffers(a, a, nullptr, &o, &r), CKPTSPEC_INVALID_ARGUMENT);
}

TEST(CApiTest, BuiltFlagMatchesTheBuild) {
  EXPECT_EQ(ckptspec_cuda_built(), CKPTSPEC_DEVICE_HAVE_CUDA ? 1 : 0);
}

}  // namespace
}  // namespace device
}  // namespace ckptspec
