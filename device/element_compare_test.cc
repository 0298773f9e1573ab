// Unit tests of the shared per-element logic (element_traits.h, element_compare.h,
// compare_accumulator.h), run on the host.
#include "device/element_compare.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <vector>

#include "device/compare_accumulator.h"
#include "device/element_traits.h"
#include "device/test_util.h"

namespace ckptspec {
namespace device {
namespace {

using testing::InfBits;
using testing::NaNBits;
using testing::NegZeroBits;
using testing::ValueBits;

TEST(UlpDistanceTest, Fp32AcrossZeroAndSubnormals) {
  constexpr DType F = DType::kFloat32;
  EXPECT_EQ(UlpDistance<F>(0x00000000u, 0x80000000u), 0u);  // +0, -0
  EXPECT_EQ(UlpDistance<F>(0x00000001u, 0x80000001u), 2u);  // +-smallest subnormal
  EXPECT_EQ(UlpDistance<F>(0x80000001u, 0x00000000u), 1u);
  EXPECT_EQ(UlpDistance<F>(0x007FFFFFu, 0x00800000u), 1u);  // largest subnormal, smallest normal
  EXPECT_EQ(UlpDistance<F>(FloatToBits(1.0f), FloatToBits(std::nextafter(1.0f, 2.0f))), 1u);
  EXPECT_EQ(UlpDistance<F>(FloatToBits(-1.0f), FloatToBits(1.0f)), 2u * 0x3F800000u);
  EXPECT_EQ(UlpDistance<F>(0x7F7FFFFFu, 0x7F800000u), 1u);  // max finite to inf
}

TEST(UlpDistanceTest, NarrowFloatsAcrossZeroAndSubnormals) {
  EXPECT_EQ(UlpDistance<DType::kBFloat16>(0x0001, 0x8001), 2u);
  EXPECT_EQ(UlpDistance<DType::kBFloat16>(0x007F, 0x0080), 1u);
  EXPECT_EQ(UlpDistance<DType::kFloat16>(0x0000, 0x8000), 0u);
  EXPECT_EQ(UlpDistance<DType::kFloat16>(0x03FF, 0x0400), 1u);
  EXPECT_EQ(UlpDistance<DType::kFloat16>(0x8001, 0x0001), 2u);
  EXPECT_EQ(UlpDistance<DType::kFloat8E4M3>(0x01, 0x81), 2u);
  EXPECT_EQ(UlpDistance<DType::kFloat8E4M3>(0x07, 0x08), 1u);  // largest subnormal, min normal
  EXPECT_EQ(UlpDistance<DType::kFloat8E4M3>(0x7E, 0xFE), 2u * 0x7E);  // +-448
  EXPECT_EQ(UlpDistance<DType::kFloat8E5M2>(0x03, 0x04), 1u);
  EXPECT_EQ(UlpDistance<DType::kFloat8E5M2>(0x80, 0x00), 0u);
}

TEST(UlpDistanceTest, IntegersAreExactDifferences) {
  EXPECT_EQ(UlpDistance<DType::kInt32>(0xFFFFFFFFu, 1u), 2u);  // -1 vs 1
  EXPECT_EQ(UlpDistance<DType::kInt32>(0x80000000u, 0x7FFFFFFFu), 0xFFFFFFFFull);
  EXPECT_EQ(UlpDistance<DType::kInt64>(0x8000000000000000ull, 0x7FFFFFFFFFFFFFFFull), ~uint64_t{0});
  EXPECT_EQ(UlpDistance<DType::kInt64>(5, 5), 0u);
}

TEST(ElementTraitsTest, SpecialValuesPerDType) {
  EXPECT_TRUE(IsNaN<DType::kFloat8E4M3>(0x7F));
  EXPECT_TRUE(IsNaN<DType::kFloat8E4M3>(0xFF));
  EXPECT_FALSE(IsNaN<DType::kFloat8E4M3>(0x7E));
  EXPECT_FALSE(IsInf<DType::kFloat8E4M3>(0x78));  // 256: e4m3fn has no infinity
  EXPECT_TRUE(IsInf<DType::kFloat8E5M2>(0x7C));
  EXPECT_TRUE(IsInf<DType::kFloat8E5M2>(0xFC));
  EXPECT_TRUE(IsNaN<DType::kFloat8E5M2>(0x7D));
  EXPECT_TRUE(IsInf<DType::kBFloat16>(0xFF80));
  EXPECT_TRUE(IsNaN<DType::kBFloat16>(0x7F81));
  EXPECT_TRUE(IsNaN<DType::kFloat16>(0x7C01));
  EXPECT_FALSE(IsNaN<DType::kFloat16>(0x7C00));
  EXPECT_TRUE(IsZero<DType::kFloat32>(0x80000000u));
  EXPECT_FALSE(IsZero<DType::kFloat32>(0x80000001u));
}

// Compares one pair and returns the accumulator.
template <DType D>
CompareAccumulator One(uint64_t a, uint64_t e, CompareMode mode, bool equal_nan = false,
                       uint64_t max_ulp = 0, double rtol = 0, double atol = 0) {
  CompareParams p{mode, equal_nan, max_ulp, rtol, atol};
  CompareAccumulator acc = EmptyAccumulator();
  AccumulateElement<D>(a, e, 7, 7, p, &acc);
  return acc;
}

int ClassOf(const CompareAccumulator& acc) {
  int found = -1;
  for (int c = 0; c < kNumMismatchClasses; ++c) {
    if (acc.mismatches[c] == 1) found = c;
  }
  return found;  // -1: match
}

TEST(ClassifyTest, BitwiseClasses) {
  constexpr DType F = DType::kFloat32;
  const auto bw = CompareMode::kBitwise;
  EXPECT_EQ(ClassOf(One<F>(ValueBits(F, 1), ValueBits(F, 1), bw)), -1);
  EXPECT_EQ(ClassOf(One<F>(ValueBits(F, 1), ValueBits(F, 2), bw)), kValueMismatch);
  EXPECT_EQ(ClassOf(One<F>(NaNBits(F), ValueBits(F, 2), bw)), kNaNMismatch);
  EXPECT_EQ(ClassOf(One<F>(ValueBits(F, 2), NaNBits(F), bw)), kNaNMismatch);
  EXPECT_EQ(ClassOf(One<F>(NaNBits(F), NaNBits(F), bw)), -1);  // same bits
  EXPECT_EQ(ClassOf(One<F>(NaNBits(F), NaNBits(F) | 1, bw)), kNaNMismatch);
  EXPECT_EQ(ClassOf(One<F>(InfBits(F), ValueBits(F, 2), bw)), kInfMismatch);
  EXPECT_EQ(ClassOf(One<F>(InfBits(F), InfBits(F) | 0x80000000u, bw)), kInfMismatch);
  EXPECT_EQ(ClassOf(One<F>(NegZeroBits(F), 0, bw)), kSignedZeroMismatch);
  EXPECT_EQ(ClassOf(One<F>(0, 1, bw)), kValueMismatch);  // zero vs subnormal
}

TEST(ClassifyTest, NaNRulesInUlpAndToleranceModes) {
  constexpr DType H = DType::kFloat16;
  for (CompareMode mode : {CompareMode::kUlp, CompareMode::kTolerance}) {
    EXPECT_EQ(ClassOf(One<H>(NaNBits(H), NaNBits(H), mode, false)), kNaNMismatch);
    EXPECT_EQ(ClassOf(One<H>(NaNBits(H), NaNBits(H), mode, true)), -1);
    EXPECT_EQ(ClassOf(One<H>(NaNBits(H) | 0x8000, NaNBits(H) | 1, mode, true)), -1);
    EXPECT_EQ(ClassOf(One<H>(NaNBits(H), ValueBits(H, 1), mode, true)), kNaNMismatch);
    // Signed zeros are equal values.
    EXPECT_EQ(ClassOf(One<H>(NegZeroBits(H), 0, mode)), -1);
    // An infinity matches only itself, however loose the tolerance.
    EXPECT_EQ(ClassOf(One<H>(InfBits(H), ValueBits(H, 65504), mode, false, 1000, 1, 1e30)),
              kInfMismatch);
    EXPECT_EQ(ClassOf(One<H>(InfBits(H), InfBits(H), mode)), -1);
  }
}

TEST(ClassifyTest, UlpK) {
  constexpr DType B = DType::kBFloat16;
  const uint64_t one = ValueBits(B, 1);
  EXPECT_EQ(ClassOf(One<B>(one + 2, one, CompareMode::kUlp, false, 2)), -1);
  EXPECT_EQ(ClassOf(One<B>(one + 3, one, CompareMode::kUlp, false, 2)), kValueMismatch);
  EXPECT_EQ(One<B>(one + 3, one, CompareMode::kUlp, false, 2).max_ulp, 3u);
  // Across zero: smallest positive vs smallest negative subnormal are 2 apart.
  EXPECT_EQ(ClassOf(One<B>(0x0001, 0x8001, CompareMode::kUlp, false, 2)), -1);
  EXPECT_EQ(ClassOf(One<B>(0x0001, 0x8001, CompareMode::kUlp, false, 1)), kValueMismatch);
  // Integers: the difference.
  EXPECT_EQ(ClassOf(One<DType::kInt32>(10, 12, CompareMode::kUlp, false, 2)), -1);
  EXPECT_EQ(ClassOf(One<DType::kInt32>(10, 13, CompareMode::kUlp, false, 2)), kValueMismatch);
}

TEST(ClassifyTest, ToleranceBoundIsInclusiveAndRelativeToExpected) {
  constexpr DType F = DType::kFloat32;
  const auto tol = CompareMode::kTolerance;
  // |a - e| <= atol + rtol * |e| with e = 1, rtol = 0.25, atol = 0.25: bound 0.5.
  EXPECT_EQ(ClassOf(One<F>(ValueBits(F, 1.5f), ValueBits(F, 1), tol, false, 0, 0.25, 0.25)), -1);
  EXPECT_EQ(ClassOf(One<F>(ValueBits(F, 1.5000001f), ValueBits(F, 1), tol, false, 0, 0.25, 0.25)),
            kValueMismatch);
  // Relative to expected, not actual: e = 2, a = 1: bound 0.75 >= 1 fails; swapped passes.
  EXPECT_EQ(ClassOf(One<F>(ValueBits(F, 1), ValueBits(F, 2), tol, false, 0, 0.25, 0.25)),
            kValueMismatch);
  EXPECT_EQ(ClassOf(One<F>(ValueBits(F, 2), ValueBits(F, 1), tol, false, 0, 0.5, 0.5)), -1);
  // Integers use the same formula; the default (0, 0) is exact.
  EXPECT_EQ(ClassOf(One<DType::kInt64>(100, 101, tol)), kValueMismatch);
  EXPECT_EQ(ClassOf(One<DType::kInt64>(100, 101, tol, false, 0, 0, 1)), -1);
}

TEST(ClassifyTest, ErrorsOfOnePair) {
  constexpr DType F = DType::kFloat32;
  const CompareAccumulator acc = One<F>(ValueBits(F, 1.5f), ValueBits(F, 1), CompareMode::kBitwise);
  EXPECT_EQ(acc.max_abs, 0.5);
  EXPECT_EQ(acc.max_rel, 0.5);
  EXPECT_EQ(acc.max_ulp, 0x400000u);
  EXPECT_EQ(acc.max_abs_index, 7);
  EXPECT_EQ(acc.first_mismatch, 7);
  const CompareAccumulator zero_expected = One<F>(ValueBits(F, 1), 0, CompareMode::kBitwise);
  EXPECT_TRUE(std::isinf(zero_expected.max_rel));
  const CompareAccumulator same = One<F>(ValueBits(F, 1), ValueBits(F, 1), CompareMode::kBitwise);
  EXPECT_EQ(same.max_abs_index, kNoIndex);
  EXPECT_EQ(same.first_mismatch, kNoIndex);
}

TEST(AccumulatorTest, MaxTiesGoToTheLowestIndex) {
  CompareAccumulator a = EmptyAccumulator();
  CompareAccumulator b = EmptyAccumulator();
  UpdateMax(2.0, 9, &a.max_abs, &a.max_abs_index);
  UpdateMax(2.0, 4, &b.max_abs, &b.max_abs_index);
  EXPECT_EQ(Merge(a, b).max_abs_index, 4);
  EXPECT_EQ(Merge(b, a).max_abs_index, 4);
  UpdateMax(0.0, 1, &a.max_rel, &a.max_rel_index);
  EXPECT_EQ(a.max_rel_index, kNoIndex);
}

// Any partition of a sequence of pairs into parts, accumulated and merged in any order, equals
// accumulating the whole sequence in order.
RC_GTEST_PROP(AccumulatorProperty, MergeOfAnyPartitionEqualsSequential, ()) {
  constexpr DType B = DType::kBFloat16;
  const auto n = *rc::gen::inRange<int>(1, 200);
  const auto a_bits = *rc::gen::container<std::vector<uint16_t>>(n, rc::gen::arbitrary<uint16_t>());
  auto e_bits = a_bits;
  const auto flips =
      *rc::gen::container<std::vector<uint16_t>>(n, rc::gen::inRange<uint16_t>(0, 4));
  for (int i = 0; i < n; ++i) e_bits[i] ^= flips[i] == 0 ? 0x0003 : (flips[i] == 1 ? 0x8000 : 0);
  const auto mode = static_cast<CompareMode>(*rc::gen::inRange(0, 3));
  const CompareParams p{mode, *rc::gen::arbitrary<bool>(), 1, 1e-2, 1e-5};
  CompareAccumulator whole = EmptyAccumulator();
  for (int i = 0; i < n; ++i) AccumulateElement<B>(a_bits[i], e_bits[i], i, i, p, &whole);
  const auto part_of = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, 4));
  std::vector<CompareAccumulator> parts(4, EmptyAccumulator());
  for (int i = n - 1; i >= 0; --i) {  // reverse order inside each part, too
    AccumulateElement<B>(a_bits[i], e_bits[i], i, i, p, &parts[part_of[i]]);
  }
  const CompareAccumulator merged = Merge(Merge(parts[3], parts[1]), Merge(parts[0], parts[2]));
  RC_ASSERT(memcmp(&merged, &whole, sizeof whole) == 0);
}

}  // namespace
}  // namespace device
}  // namespace ckptspec
