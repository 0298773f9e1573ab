// Load to CUDA device memory and check there with the kernels (built only with CUDA; every test
// skips visibly with "no CUDA device" on a machine without one). The device reports must equal
// the host path's bit for bit, since the kernels and the CPU twin share one contract.
#include <gtest/gtest.h>

#include <cstring>

#include "targets/device_load/load_test_util.h"
#include "targets/device_load/load_to_device.h"
#include "targets/device_load/tensor_check.h"

namespace ckptspec {
namespace {

using testing_util::kLoadSeed;
using testing_util::MemHarness;
using testing_util::Plant;
using testing_util::SaveTp2;
using testing_util::Tp4Request;

#define SKIP_WITHOUT_CUDA_DEVICE() \
  if (!CudaAvailable().ok()) GTEST_SKIP() << "no CUDA device"

bool SameReport(const ckptspec_compare_report& a, const ckptspec_compare_report& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Loads iteration 10 (planted or not) both ways and checks both; returns the device checks.
void LoadBothWays(bool corrupt, std::vector<TensorCheck>* device_checks,
                  std::vector<TensorCheck>* host_checks) {
  MemHarness h;
  std::vector<Plant> plants;
  SaveTp2(&h, 10, corrupt, &plants);
  MemoryLoadResult on_device, on_host;
  Status s = LoadToDevice(*h.engine, Tp4Request(10), &on_device);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(LoadToMemory(*h.engine, Tp4Request(10), MemoryKind::kHost, &on_host).ok());
  ASSERT_EQ(on_device.tensors.size(), on_host.tensors.size());
  for (size_t i = 0; i < on_device.tensors.size(); ++i) {
    ASSERT_EQ(on_device.tensors[i].buffer->kind(), MemoryKind::kCuda);
    std::vector<uint8_t> device_bytes, host_bytes;
    ASSERT_TRUE(on_device.tensors[i].buffer->CopyToHost(&device_bytes).ok());
    ASSERT_TRUE(on_host.tensors[i].buffer->CopyToHost(&host_bytes).ok());
    ASSERT_EQ(device_bytes, host_bytes) << on_device.tensors[i].spec.key;
  }
  s = CheckGenerated(on_device.tensors, kLoadSeed, CheckOptions(), device_checks);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(CheckGenerated(on_host.tensors, kLoadSeed, CheckOptions(), host_checks).ok());
}

TEST(LoadToDeviceCuda, Tp2ToTp4RoundTripMatchesOnDevice) {
  SKIP_WITHOUT_CUDA_DEVICE();
  std::vector<TensorCheck> device_checks, host_checks;
  LoadBothWays(false, &device_checks, &host_checks);
  EXPECT_TRUE(AllMatch(device_checks));
  ASSERT_EQ(device_checks.size(), host_checks.size());
  for (size_t i = 0; i < device_checks.size(); ++i) {
    EXPECT_TRUE(SameReport(device_checks[i].report, host_checks[i].report)) << device_checks[i].key;
  }
}

TEST(LoadToDeviceCuda, PlantedValuesGiveTheHostReportsOnDevice) {
  SKIP_WITHOUT_CUDA_DEVICE();
  std::vector<TensorCheck> device_checks, host_checks;
  LoadBothWays(true, &device_checks, &host_checks);
  EXPECT_FALSE(AllMatch(device_checks));
  uint64_t nan = 0, value = 0;
  for (size_t i = 0; i < device_checks.size(); ++i) {
    EXPECT_TRUE(SameReport(device_checks[i].report, host_checks[i].report))
        << DescribeCheck(device_checks[i]) << " vs " << DescribeCheck(host_checks[i]);
    nan += device_checks[i].report.nan_mismatches;
    value += device_checks[i].report.value_mismatches;
  }
  EXPECT_GE(nan, 1u);
  EXPECT_GE(value, 1u);
}

TEST(LoadToDeviceCuda, CheckAgainstMixedMemoryIsRefused) {
  SKIP_WITHOUT_CUDA_DEVICE();
  MemHarness h;
  SaveTp2(&h, 10, false, nullptr);
  MemoryLoadResult on_device, on_host;
  ASSERT_TRUE(LoadToDevice(*h.engine, Tp4Request(10), &on_device).ok());
  ASSERT_TRUE(LoadToMemory(*h.engine, Tp4Request(10), MemoryKind::kHost, &on_host).ok());
  std::vector<TensorCheck> checks;
  EXPECT_EQ(CheckAgainst(on_device.tensors, on_host.tensors, CheckOptions(), &checks).code(),
            Status::Code::kInvalidArgument);
  MemoryLoadResult again;
  ASSERT_TRUE(LoadToDevice(*h.engine, Tp4Request(10), &again).ok());
  ASSERT_TRUE(CheckAgainst(on_device.tensors, again.tensors, CheckOptions(), &checks).ok());
  EXPECT_TRUE(AllMatch(checks));
}

}  // namespace
}  // namespace ckptspec
