#include "model/float_codec.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>

namespace ckptspec {
namespace {

TEST(FloatCodec, Float8RoundTripEveryCode) {
  for (uint32_t code = 0; code < 256; ++code) {
    const float e4 = Float8E4M3Codec::Decode(code);
    if (!std::isnan(e4)) {
      EXPECT_EQ(Float8E4M3Codec::Encode(e4), code) << code;
    }
    const float e5 = Float8E5M2Codec::Decode(code);
    if (!std::isnan(e5)) {
      EXPECT_EQ(Float8E5M2Codec::Encode(e5), code) << code;
    }
  }
}

TEST(FloatCodec, SixteenBitRoundTripEveryCode) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const float h = Float16Codec::Decode(code);
    if (!std::isnan(h)) {
      EXPECT_EQ(Float16Codec::Encode(h), code) << code;
    }
    const float b = BFloat16Codec::Decode(code);
    if (!std::isnan(b)) {
      EXPECT_EQ(BFloat16Codec::Encode(b), code) << code;
    }
  }
}

TEST(FloatCodec, KnownValues) {
  EXPECT_EQ(Float8E4M3Codec::Decode(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(Float8E4M3Codec::Decode(0x7F)));
  EXPECT_EQ(Float8E4M3Codec::Decode(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(Float8E4M3Codec::Encode(464.0f), 0x7Eu);               // tie rounds to even (448)
  EXPECT_EQ(Float8E4M3Codec::Encode(470.0f), 0x7Fu);               // overflow -> NaN
  EXPECT_EQ(Float8E4M3Codec::Encode(std::numeric_limits<float>::infinity()), 0x7Fu);
  EXPECT_EQ(Float8E5M2Codec::Decode(0x7B), 57344.0f);
  EXPECT_EQ(Float8E5M2Codec::Encode(61440.0f), 0x7Cu);  // tie to even carries into inf
  EXPECT_EQ(Float8E5M2Codec::Encode(-1e9f), 0xFCu);
  EXPECT_EQ(Float16Codec::Encode(65504.0f), 0x7BFFu);
  EXPECT_EQ(Float16Codec::Encode(65520.0f), 0x7C00u);
  EXPECT_EQ(Float16Codec::Encode(std::ldexp(1.0f, -24)), 0x0001u);
  EXPECT_EQ(Float16Codec::Encode(std::ldexp(1.0f, -25)), 0x0000u);  // tie to even -> 0
  EXPECT_EQ(Float16Codec::Encode(std::ldexp(3.0f, -26)), 0x0001u);  // 0.75 ulp rounds up
  EXPECT_EQ(BFloat16Codec::Encode(1.0f), 0x3F80u);
  EXPECT_EQ(BFloat16Codec::Encode(-0.0f), 0x8000u);
  EXPECT_EQ(BFloat16Codec::Encode(BitsToFloat(0x3F808000u)), 0x3F80u);  // tie to even
  EXPECT_EQ(BFloat16Codec::Encode(BitsToFloat(0x3F818000u)), 0x3F82u);  // tie to even, up
  EXPECT_EQ(BFloat16Codec::Encode(BitsToFloat(0x00000001u)), 0x0000u);  // fp32 subnormal
  EXPECT_EQ(BFloat16Codec::Encode(BitsToFloat(0x00008001u)), 0x0001u);
}

// bf16 against the classic bit-trick rounding (valid for every non-NaN input).
RC_GTEST_PROP(FloatCodec, BFloat16MatchesBitTrick, (uint32_t bits)) {
  const float f = BitsToFloat(bits);
  RC_PRE(!std::isnan(f));
  const uint32_t expected = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  RC_ASSERT(BFloat16Codec::Encode(f) == expected);
}

#if defined(__FLT16_MAX__)
// fp16 against the compiler's _Float16 conversion (round to nearest even).
RC_GTEST_PROP(FloatCodec, Float16MatchesCompiler, (uint32_t bits)) {
  const float f = BitsToFloat(bits);
  RC_PRE(!std::isnan(f));
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t expected;
  memcpy(&expected, &h, sizeof expected);
  RC_ASSERT(Float16Codec::Encode(f) == expected);
}
#endif

// fp8: the encoded value is the nearest representable one, ties to the even code, per an oracle
// that decodes all 256 codes; only values beyond the largest finite one may overflow.
template <typename Codec>
void CheckNearest8(float f) {
  const uint32_t code = Codec::Encode(f);
  const double x = std::fabs(static_cast<double>(f));
  double max_finite = 0;
  for (uint32_t c = 0; c < 0x80; ++c) {
    const float v = Codec::Decode(c);
    if (std::isfinite(v)) max_finite = std::max(max_finite, static_cast<double>(v));
  }
  const float decoded = Codec::Decode(code);
  if (!std::isfinite(decoded)) {
    RC_ASSERT(x > max_finite);
    return;
  }
  RC_ASSERT(std::signbit(decoded) == std::signbit(f));
  const double err = std::fabs(std::fabs(static_cast<double>(decoded)) - x);
  for (uint32_t c = 0; c < 0x80; ++c) {
    const float v = Codec::Decode(c);
    if (!std::isfinite(v)) continue;
    const double other = std::fabs(static_cast<double>(v) - x);
    RC_ASSERT(err <= other);
    if (other == err && c != (code & 0x7F)) RC_ASSERT((code & 1u) == 0u);
  }
}

RC_GTEST_PROP(FloatCodec, Float8E4M3IsNearestEven, ()) {
  const float f = std::ldexp(*rc::gen::inRange(-(1 << 20), 1 << 20), *rc::gen::inRange(-30, 2));
  CheckNearest8<Float8E4M3Codec>(f);
}

RC_GTEST_PROP(FloatCodec, Float8E5M2IsNearestEven, ()) {
  const float f = std::ldexp(*rc::gen::inRange(-(1 << 20), 1 << 20), *rc::gen::inRange(-40, 0));
  CheckNearest8<Float8E5M2Codec>(f);
}

TEST(FloatCodec, NaNKeepsSign) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Float8E4M3Codec::Encode(-nan), 0xFFu);
  EXPECT_EQ(Float8E5M2Codec::Encode(nan) & 0x80u, 0u);
  EXPECT_TRUE(std::isnan(Float8E5M2Codec::Decode(Float8E5M2Codec::Encode(nan))));
  EXPECT_TRUE(std::signbit(Float16Codec::Decode(Float16Codec::Encode(-nan))));
}

}  // namespace
}  // namespace ckptspec
