// Tests of the CPU twin (compare_host.h): planted mismatches of every class in every dtype,
// coordinates in sharded tensors, tolerance semantics over whole buffers, checksums, the
// generated-expected mode, and input validation.
#include "device/compare_host.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>

#include "device/compare_accumulator.h"
#include "device/test_util.h"
#include "model/content.h"
#include "model/content_fill.h"

namespace ckptspec {
namespace device {
namespace {

using testing::ElementBuffer;
using testing::FlatGeometry;
using testing::HasInfinity;
using testing::InfBits;
using testing::MakeGeometry;
using testing::NaNBits;
using testing::NegZeroBits;
using testing::Options;
using testing::SameReport;
using testing::ValueBits;

constexpr uint64_t kSeed = 1234;
const uint64_t kKey = KeyHash("layers.0.weight");

ElementBuffer Content(DType dtype, const Dims& global_shape, const Box& local) {
  ElementBuffer b(dtype, Volume(local.shape));
  FillContent(dtype, kSeed, kKey, global_shape, local, b.data());
  return b;
}

ckptspec_compare_report Compare(const ElementBuffer& actual, const ElementBuffer& expected,
                                const ckptspec_shard_geometry& geometry,
                                const ckptspec_compare_options& options) {
  ckptspec_compare_report report;
  const Status s = CompareHostBuffers(actual.data(), expected.data(), geometry, options, &report);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return report;
}

ckptspec_compare_report CompareFlat(const ElementBuffer& actual, const ElementBuffer& expected,
                                    const ckptspec_compare_options& options) {
  return Compare(actual, expected, FlatGeometry(actual.count()), options);
}

class PlantedTest : public ::testing::TestWithParam<DType> {};

// Plants one mismatch of each class the dtype can express, at known indices, in a content buffer.
TEST_P(PlantedTest, EveryClassIsCountedInBitwiseMode) {
  const DType d = GetParam();
  const int64_t n = 1000;
  ElementBuffer expected = Content(d, {n}, Box{{0}, {n}});
  ElementBuffer actual = expected;
  const bool floating = IsFloatingDType(d);
  // value
  expected.Set(500, ValueBits(d, 0.5f));
  actual.Set(500, ValueBits(d, floating ? 0.75f : 7.0f));
  uint64_t want_nan = 0, want_inf = 0, want_zero = 0;
  if (floating) {
    actual.Set(300, NaNBits(d));  // NaN where a number was expected
    want_nan = 1;
    expected.Set(301, NaNBits(d));  // NaN expected, got 0.5
    actual.Set(301, ValueBits(d, 0.5f));
    ++want_nan;
    if (HasInfinity(d)) {
      actual.Set(700, InfBits(d));
      want_inf = 1;
    }
    expected.Set(900, 0);
    actual.Set(900, NegZeroBits(d));
    want_zero = 1;
  }
  const ckptspec_compare_report r = CompareFlat(actual, expected, Options(d));
  EXPECT_EQ(r.element_count, static_cast<uint64_t>(n));
  EXPECT_EQ(r.value_mismatches, 1u) << r;
  EXPECT_EQ(r.nan_mismatches, want_nan) << r;
  EXPECT_EQ(r.inf_mismatches, want_inf) << r;
  EXPECT_EQ(r.signed_zero_mismatches, want_zero) << r;
  EXPECT_EQ(r.mismatch_count, 1 + want_nan + want_inf + want_zero);
  EXPECT_EQ(r.first_mismatch_index, floating ? 300 : 500);
  EXPECT_EQ(r.first_mismatch_coord[0], floating ? 300 : 500);
  EXPECT_NE(r.actual_checksum, r.expected_checksum);

  // The same buffers under a tolerance with equal_nan: signed zeros now match, NaNs still differ
  // from numbers, the planted value error (0.25, or 7 for integers) exceeds the default tolerances.
  ckptspec_compare_options tol = Options(d, CKPTSPEC_COMPARE_TOLERANCE);
  tol.equal_nan = 1;
  const ckptspec_compare_report t = CompareFlat(actual, expected, tol);
  EXPECT_EQ(t.signed_zero_mismatches, 0u);
  EXPECT_EQ(t.nan_mismatches, want_nan);
  EXPECT_EQ(t.inf_mismatches, want_inf);
  EXPECT_EQ(t.value_mismatches, 1u);
  EXPECT_EQ(t.max_abs_error, floating ? 0.25 : 7.0);  // ints: 7 vs 0
  EXPECT_EQ(t.max_abs_error_index, 500);
  EXPECT_EQ(t.actual_checksum, r.actual_checksum);  // checksums do not depend on the mode
}

TEST_P(PlantedTest, IdenticalBuffersMatchWithEqualChecksums) {
  const DType d = GetParam();
  ElementBuffer expected = Content(d, {4096}, Box{{0}, {4096}});
  const ckptspec_compare_report r = CompareFlat(expected, expected, Options(d));
  EXPECT_EQ(r.mismatch_count, 0u);
  EXPECT_EQ(r.first_mismatch_index, -1);
  EXPECT_EQ(r.max_abs_error_index, -1);
  EXPECT_EQ(r.max_abs_error, 0.0);
  EXPECT_EQ(r.actual_checksum, r.expected_checksum);
}

// Generated expected values equal comparing against a buffer filled by FillContent, for a shard
// of a 3-D tensor, with planted mismatches.
TEST_P(PlantedTest, GeneratedExpectedEqualsFillContentBuffer) {
  const DType d = GetParam();
  const Dims global{6, 10, 12};
  const Box local{{2, 3, 4}, {3, 5, 7}};
  ElementBuffer expected = Content(d, global, local);
  ElementBuffer actual = expected;
  actual.Set(17, actual.Get(17) ^ 1);
  actual.Set(88, ValueBits(d, IsFloatingDType(d) ? -0.5f : -3.0f));
  const ckptspec_shard_geometry g = MakeGeometry(global, local);
  for (int mode = 0; mode < 3; ++mode) {
    const ckptspec_compare_options o = Options(d, mode);
    const ckptspec_compare_report buffered = Compare(actual, expected, g, o);
    ckptspec_compare_report generated;
    ASSERT_TRUE(CompareHostGenerated(actual.data(), kSeed, kKey, g, o, &generated).ok());
    EXPECT_TRUE(SameReport(buffered, generated)) << buffered << "\n" << generated;
    EXPECT_EQ(generated.first_mismatch_index, 17);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, PlantedTest, ::testing::ValuesIn(kAllDTypes),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

TEST(CompareHostTest, FirstMismatchCoordinatesInAShardOf3DTensor) {
  const DType d = DType::kFloat32;
  const Dims global{4, 6, 8};
  const Box local{{2, 3, 4}, {2, 3, 4}};
  ElementBuffer expected = Content(d, global, local);
  ElementBuffer actual = expected;
  // local (1, 2, 3) -> index 1*12 + 2*4 + 3 = 23; local (1, 2, 1) -> 21.
  actual.Set(23, ValueBits(d, 3));
  actual.Set(21, ValueBits(d, 3));
  const ckptspec_compare_report r = Compare(actual, expected, MakeGeometry(global, local),
                                            Options(d, CKPTSPEC_COMPARE_BITWISE, 3));
  EXPECT_EQ(r.mismatch_count, 2u);
  EXPECT_EQ(r.first_mismatch_index, 21);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.first_mismatch_coord[0], 3);
  EXPECT_EQ(r.first_mismatch_coord[1], 5);
  EXPECT_EQ(r.first_mismatch_coord[2], 5);
  EXPECT_EQ(r.first_mismatch_global_index, 3 * 48 + 5 * 8 + 5);
}

TEST(CompareHostTest, MaxErrorTiesReportTheLowestIndexWhateverTheThreads) {
  const DType d = DType::kFloat32;
  const int64_t n = 300000;  // several threads' worth
  ElementBuffer expected(d, n);
  for (int64_t i = 0; i < n; ++i) expected.Set(i, ValueBits(d, 1));
  ElementBuffer actual = expected;
  for (int64_t i : {250000, 7000, 160000}) actual.Set(i, ValueBits(d, 2));
  for (int threads : {1, 2, 3, 8}) {
    const auto r = CompareFlat(actual, expected, Options(d, CKPTSPEC_COMPARE_BITWISE, threads));
    EXPECT_EQ(r.max_abs_error, 1.0);
    EXPECT_EQ(r.max_abs_error_index, 7000);
    EXPECT_EQ(r.max_rel_error_index, 7000);
    EXPECT_EQ(r.max_ulp_error_index, 7000);
    EXPECT_EQ(r.first_mismatch_index, 7000);
    EXPECT_EQ(r.mismatch_count, 3u);
  }
}

TEST(CompareHostTest, TorchDefaultTolerancesPerDType) {
  // bf16: rtol 1.6e-2 admits one bf16 ulp at 1.0 (2^-7 = 0.0078125) but not four (0.03125).
  const DType b = DType::kBFloat16;
  ElementBuffer e(b, 2), a(b, 2);
  e.Set(0, ValueBits(b, 1));
  e.Set(1, ValueBits(b, 1));
  a.Set(0, ValueBits(b, 1.0078125f));
  a.Set(1, ValueBits(b, 1.03125f));
  ckptspec_compare_options o = Options(b, CKPTSPEC_COMPARE_TOLERANCE);
  o.rtol = 1.6e-2;
  o.atol = 1e-5;
  auto r = CompareFlat(a, e, o);
  EXPECT_EQ(r.value_mismatches, 1u);
  EXPECT_EQ(r.first_mismatch_index, 1);
  // fp32 defaults: 1 + 1e-6 passes (bound 1.3e-6 + 1e-5), 1 + 2e-5 fails.
  const DType f = DType::kFloat32;
  ElementBuffer ef(f, 2), af(f, 2);
  ef.Set(0, ValueBits(f, 1));
  ef.Set(1, ValueBits(f, 1));
  af.Set(0, ValueBits(f, 1 + 1e-6f));
  af.Set(1, ValueBits(f, 1 + 2e-5f));
  ckptspec_compare_options of = Options(f, CKPTSPEC_COMPARE_TOLERANCE);
  of.rtol = 1.3e-6;
  of.atol = 1e-5;
  r = CompareFlat(af, ef, of);
  EXPECT_EQ(r.value_mismatches, 1u);
  EXPECT_EQ(r.first_mismatch_index, 1);
}

TEST(CompareHostTest, ShardChecksumsAddUpToTheWholeTensor) {
  const DType d = DType::kBFloat16;
  const Dims global{8, 6, 10};
  const Box whole{{0, 0, 0}, global};
  ElementBuffer full = Content(d, global, whole);
  const auto full_report = Compare(full, full, MakeGeometry(global, whole), Options(d));
  // Eight shards of a 2x1x2 grid... of cells (4, 6, 5), compared in an arbitrary order.
  uint64_t actual_sum = 0, expected_sum = 0;
  for (const Dims& offset : {Dims{4, 0, 5}, Dims{0, 0, 0}, Dims{0, 0, 5}, Dims{4, 0, 0}}) {
    const Box cell{offset, {4, 6, 5}};
    ElementBuffer shard = Content(d, global, cell);
    const auto r = Compare(shard, shard, MakeGeometry(global, cell), Options(d));
    actual_sum = CombineChecksums(actual_sum, r.actual_checksum);
    expected_sum += r.expected_checksum;
  }
  EXPECT_EQ(actual_sum, full_report.actual_checksum);
  EXPECT_EQ(expected_sum, full_report.expected_checksum);
}

TEST(CompareHostTest, ChecksumOfTwoHalvesInEitherOrderEqualsTheWhole) {
  const DType d = DType::kInt64;
  const int64_t n = 1001;
  ElementBuffer full = Content(d, {n}, Box{{0}, {n}});
  const auto whole = CompareFlat(full, full, Options(d));
  ElementBuffer first = Content(d, {n}, Box{{0}, {400}});
  ElementBuffer second = Content(d, {n}, Box{{400}, {n - 400}});
  const auto r2 = Compare(second, second, MakeGeometry({n}, Box{{400}, {n - 400}}), Options(d));
  const auto r1 = Compare(first, first, MakeGeometry({n}, Box{{0}, {400}}), Options(d));
  EXPECT_EQ(CombineChecksums(r2.actual_checksum, r1.actual_checksum), whole.actual_checksum);
  // Moving an element changes the checksum (index salting), even though the multiset is equal.
  ElementBuffer swapped = full;
  swapped.Set(3, full.Get(4));
  swapped.Set(4, full.Get(3));
  EXPECT_NE(CompareFlat(swapped, full, Options(d)).actual_checksum, whole.actual_checksum);
}

TEST(CompareHostTest, EmptyShardAndScalar) {
  const DType d = DType::kFloat16;
  ckptspec_compare_report r;
  ASSERT_TRUE(CompareHostBuffers(nullptr, nullptr, FlatGeometry(0), Options(d), &r).ok());
  EXPECT_EQ(r.element_count, 0u);
  EXPECT_EQ(r.first_mismatch_index, -1);
  ckptspec_shard_geometry scalar{};
  ElementBuffer a(d, 1), e(d, 1);
  a.Set(0, ValueBits(d, 1));
  r = Compare(a, e, scalar, Options(d));
  EXPECT_EQ(r.element_count, 1u);
  EXPECT_EQ(r.first_mismatch_index, 0);
}

TEST(CompareHostTest, BadInputIsRejectedWithANamedField) {
  const DType d = DType::kFloat32;
  ElementBuffer a(d, 4);
  ckptspec_compare_report r;
  const auto g = FlatGeometry(4);
  auto message = [&](const void* actual, const void* expected,
                     const ckptspec_shard_geometry& geometry, const ckptspec_compare_options& o) {
    const Status s = CompareHostBuffers(actual, expected, geometry, o, &r);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    return s.message();
  };
  EXPECT_NE(message(nullptr, a.data(), g, Options(d)).find("actual"), std::string::npos);
  EXPECT_NE(message(a.data(), nullptr, g, Options(d)).find("expected"), std::string::npos);
  ckptspec_compare_options o = Options(d);
  o.dtype = 7;
  EXPECT_NE(message(a.data(), a.data(), g, o).find("dtype 7"), std::string::npos);
  o = Options(d);
  o.mode = 3;
  EXPECT_NE(message(a.data(), a.data(), g, o).find("mode 3"), std::string::npos);
  o = Options(d);
  o.rtol = -1;
  EXPECT_NE(message(a.data(), a.data(), g, o).find("rtol"), std::string::npos);
  o = Options(d);
  o.atol = NAN;
  EXPECT_NE(message(a.data(), a.data(), g, o).find("atol"), std::string::npos);
  o = Options(d);
  o.threads = -2;
  EXPECT_NE(message(a.data(), a.data(), g, o).find("threads"), std::string::npos);
  ckptspec_shard_geometry bad = g;
  bad.offset[0] = 1;  // 1 + 4 > 4
  EXPECT_NE(message(a.data(), a.data(), bad, Options(d)).find("axis 0"), std::string::npos);
  bad = g;
  bad.rank = 9;
  EXPECT_NE(message(a.data(), a.data(), bad, Options(d)).find("rank 9"), std::string::npos);
  bad = g;
  bad.local_shape[0] = -1;
  EXPECT_NE(message(a.data(), a.data(), bad, Options(d)).find("local_shape[0]"), std::string::npos);
  bad = MakeGeometry({int64_t{1} << 40, int64_t{1} << 40}, Box{{0, 0}, {1, 1}});
  EXPECT_NE(message(a.data(), a.data(), bad, Options(d)).find("overflows"), std::string::npos);
  EXPECT_EQ(CompareHostBuffers(a.data(), a.data(), g, Options(d), nullptr).code(),
            Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace device
}  // namespace ckptspec
