// EncodeContentUnit against the generic encoder, exhaustively: ContentUnitFloat has exactly 2^24
// possible values (bits 40..63 of its input), and every one of them is checked for every dtype.
#include "model/content_encode.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "model/content.h"

namespace ckptspec {
namespace {

constexpr uint64_t kUnitValues = uint64_t{1} << 24;

// The input word whose unit value is the u-th of the 2^24 (low 40 bits are ignored by design;
// they are set to a non-zero pattern to show that).
uint64_t WordFor(uint64_t u) { return (u << 40) | 0x5A5A5A5A5Aull; }

TEST(ContentEncode, BitIdenticalToGenericEncoderForEveryUnitValue) {
  for (DType dtype : kAllDTypes) {
    if (!IsFloatingDType(dtype)) continue;
    uint64_t mismatches = 0;
    uint64_t first = 0;
    for (uint64_t u = 0; u < kUnitValues; ++u) {
      const uint64_t word = WordFor(u);
      const uint64_t fast = EncodeContentUnit(dtype, word);
      const uint64_t generic = EncodeFloat(dtype, ContentUnitFloat(word));
      if (fast != generic) {
        if (mismatches++ == 0) first = u;
      }
    }
    EXPECT_EQ(mismatches, 0u) << DTypeName(dtype) << ": first differing unit value r = "
                              << static_cast<int64_t>(first) - (int64_t{1} << 23);
  }
}

TEST(ContentEncode, ElementBitsUseTheExactPath) {
  for (DType dtype : kAllDTypes) {
    for (uint64_t i = 0; i < 4096; ++i) {
      const uint64_t bits = ContentBits(11, KeyHash("enc"), i);
      const uint64_t want = dtype == DType::kInt32   ? (bits & 0xFFFFFFFFull)
                            : dtype == DType::kInt64 ? bits
                                                     : EncodeFloat(dtype, ContentUnitFloat(bits));
      ASSERT_EQ(ContentElementBits(dtype, 11, KeyHash("enc"), i), want) << DTypeName(dtype);
    }
  }
}

// Edges named explicitly (they are inside the exhaustive sweep too): zero, -1, the largest value,
// the fp16/fp8 subnormal boundaries and an fp8 tie.
TEST(ContentEncode, Edges) {
  auto word = [](int64_t r) { return static_cast<uint64_t>(r + (int64_t{1} << 23)) << 40; };
  EXPECT_EQ(EncodeContentUnit(DType::kBFloat16, word(0)), 0u);
  EXPECT_EQ(EncodeContentUnit(DType::kBFloat16, word(-(int64_t{1} << 23))), 0xBF80u);    // -1
  EXPECT_EQ(EncodeContentUnit(DType::kFloat16, word((int64_t{1} << 23) - 1)), 0x3C00u);  // 1.0
  EXPECT_EQ(EncodeContentUnit(DType::kFloat16, word(1)), 0x0002u);                       // 2^-23
  EXPECT_EQ(EncodeContentUnit(DType::kFloat8E4M3, word(int64_t{1} << 13)), 0x00u);  // 2^-10 tie
  EXPECT_EQ(EncodeContentUnit(DType::kFloat8E4M3, word(3 << 13)), 0x02u);  // 1.5 * 2^-9 tie -> 2
  EXPECT_EQ(EncodeContentUnit(DType::kFloat8E5M2, word(-(int64_t{1} << 7))), 0x81u);  // -2^-16
}

}  // namespace
}  // namespace ckptspec
