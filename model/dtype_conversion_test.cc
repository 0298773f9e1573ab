#include "model/dtype_conversion.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "model/float_codec.h"

namespace ckptspec {
namespace {

const DType kFloating[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kFloat8E4M3,
                           DType::kFloat8E5M2};

uint64_t Convert(DType from, DType to, uint64_t bits) {
  uint64_t out = 0;
  const Status s = ConvertElement(from, to, bits, &out);
  EXPECT_TRUE(s.ok()) << DTypeName(from) << " -> " << DTypeName(to) << ": " << s.ToString();
  return out;
}

// c10's round_to_nearest_even (PyTorch's float -> bfloat16), written from its definition as an
// independent oracle for finite inputs that stay finite.
uint32_t OracleBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u + ((u >> 16) & 1) + 0x7FFFu) >> 16;
}

TEST(DtypeConversion, TheIdentityKeepsEveryBitPattern) {
  for (DType d : kAllDTypes) {
    for (uint64_t bits : {uint64_t{0}, uint64_t{1}, uint64_t{0x7F}, uint64_t{0x7FC1}}) {
      EXPECT_EQ(Convert(d, d, bits), bits) << DTypeName(d);
    }
  }
}

TEST(DtypeConversion, IntegerDtypesConvertToNothingElse) {
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      const bool integer = !IsFloatingDType(from) || !IsFloatingDType(to);
      const Status s = CheckConversion(from, to);
      EXPECT_EQ(s.ok(), from == to || !integer) << DTypeName(from) << " -> " << DTypeName(to);
      if (!s.ok()) {
        uint64_t out = 7;
        const Status convert = ConvertElement(from, to, 1, &out);
        EXPECT_EQ(convert.code(), Status::Code::kInvalidArgument);
        EXPECT_NE(convert.message().find(DTypeName(from)), std::string::npos) << convert.message();
        EXPECT_NE(convert.message().find(DTypeName(to)), std::string::npos) << convert.message();
        EXPECT_EQ(out, 7u);
      }
    }
  }
}

TEST(DtypeConversion, Fp32ToBf16RoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even 1.0; 1 + 3 * 2^-8 lies
  // halfway between 1 + 2^-7 and 1 + 2^-6: the even one is 1 + 2^-6.
  EXPECT_EQ(Convert(DType::kFloat32, DType::kBFloat16, FloatToBits(1.0f + 0x1p-8f)), 0x3F80u);
  EXPECT_EQ(Convert(DType::kFloat32, DType::kBFloat16, FloatToBits(1.0f + 3 * 0x1p-8f)), 0x3F82u);
  // Just above the tie: up, not truncated.
  EXPECT_EQ(Convert(DType::kFloat32, DType::kBFloat16, FloatToBits(1.0f + 0x1p-8f + 0x1p-20f)),
            0x3F81u);
}

RC_GTEST_PROP(DtypeConversion, Fp32ToBf16IsPyTorchsRounding, ()) {
  // Every bit pattern at every size (an arbitrary integer narrows at small sizes).
  const uint32_t bits = *rc::gen::resize(rc::kNominalSize, rc::gen::arbitrary<uint32_t>());
  const float f = BitsToFloat(bits);
  RC_PRE(std::isfinite(f) && std::fabs(f) < 3.0e38f);
  RC_ASSERT(Convert(DType::kFloat32, DType::kBFloat16, bits) == OracleBf16(f));
}

TEST(DtypeConversion, WideningIsExactForEveryCode) {
  for (DType from : {DType::kBFloat16, DType::kFloat16}) {
    for (uint32_t code = 0; code < 65536; ++code) {
      const double v = DecodeToDouble(from, code);
      if (std::isnan(v)) continue;
      EXPECT_EQ(BitsToFloat(static_cast<uint32_t>(Convert(from, DType::kFloat32, code))),
                static_cast<float>(v))
          << DTypeName(from) << " code " << code;
    }
  }
}

TEST(DtypeConversion, Fp16ToBf16RoundsThroughTheExactValue) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const float v = Float16Codec::Decode(code);
    if (!std::isfinite(v)) continue;
    EXPECT_EQ(Convert(DType::kFloat16, DType::kBFloat16, code), OracleBf16(v)) << code;
  }
}

TEST(DtypeConversion, ExactnessMatchesTheRoundTripOfEveryNarrowCode) {
  for (DType from : kFloating) {
    if (from == DType::kFloat32) continue;  // too many codes; fp32 fits nothing narrower
    const uint32_t codes = DTypeSize(from) == 1 ? 256u : 65536u;
    for (DType to : kFloating) {
      bool every_value_kept = true;
      for (uint32_t code = 0; code < codes && every_value_kept; ++code) {
        const double v = DecodeToDouble(from, code);
        if (!std::isfinite(v)) continue;
        uint64_t there = 0;
        every_value_kept =
            ConvertElement(from, to, code, &there).ok() && DecodeToDouble(to, there) == v;
      }
      EXPECT_EQ(ConversionIsExact(from, to), every_value_kept)
          << DTypeName(from) << " -> " << DTypeName(to);
    }
  }
  EXPECT_FALSE(ConversionIsExact(DType::kFloat32, DType::kBFloat16));
  EXPECT_TRUE(ConversionIsExact(DType::kFloat32, DType::kFloat32));
}

TEST(DtypeConversion, AFiniteValueThatOverflowsIsRefused) {
  uint64_t out = 0;
  // 65519 rounds down to fp16's largest finite 65504; 65520 is the tie that rounds to infinity.
  EXPECT_TRUE(ConvertElement(DType::kFloat32, DType::kFloat16, FloatToBits(65519.0f), &out).ok());
  EXPECT_EQ(out, 0x7BFFu);
  const Status over = ConvertElement(DType::kFloat32, DType::kFloat16, FloatToBits(65520.0f), &out);
  EXPECT_EQ(over.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(over.message().find("65520"), std::string::npos) << over.message();
  EXPECT_NE(over.message().find("fp16"), std::string::npos) << over.message();
  // bf16's range is fp32's: a large bf16 weight does not fit fp16 or fp8 e4m3fn.
  EXPECT_FALSE(ConvertElement(DType::kBFloat16, DType::kFloat16, 0x4780u /* 65536 */, &out).ok());
  EXPECT_FALSE(ConvertElement(DType::kFloat32, DType::kFloat8E4M3, FloatToBits(480.0f), &out).ok());
  EXPECT_TRUE(ConvertElement(DType::kFloat32, DType::kFloat8E4M3, FloatToBits(448.0f), &out).ok());
}

TEST(DtypeConversion, NonFiniteValuesStayNonFinite) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Convert(DType::kFloat32, DType::kFloat16, FloatToBits(-inf)), 0xFC00u);
  EXPECT_EQ(Convert(DType::kBFloat16, DType::kFloat32, 0x7F80u), FloatToBits(inf));
  EXPECT_TRUE(std::isnan(DecodeToDouble(
      DType::kBFloat16, Convert(DType::kFloat32, DType::kBFloat16, FloatToBits(std::nanf(""))))));
  // e4m3fn has no infinity: an infinity becomes its NaN, not an error.
  EXPECT_TRUE(std::isnan(DecodeToDouble(
      DType::kFloat8E4M3, Convert(DType::kFloat32, DType::kFloat8E4M3, FloatToBits(inf)))));
}

TEST(DtypeConversion, ConvertsRunsOfLittleEndianElementsNamingTheFailingOne) {
  const uint8_t bf16[] = {0x80, 0x3F, 0x00, 0xC0};  // 1.0, -2.0
  uint8_t fp32[8] = {};
  ASSERT_TRUE(ConvertElements(DType::kBFloat16, DType::kFloat32, bf16, 2, 0, fp32).ok());
  float values[2];
  std::memcpy(values, fp32, sizeof values);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.0f);
  const float wide[] = {1.0f, 1.0e6f};
  uint8_t half[4] = {};
  const Status s = ConvertElements(DType::kFloat32, DType::kFloat16,
                                   reinterpret_cast<const uint8_t*>(wide), 2, 40, half);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message().find("element 41: "), 0u) << s.ToString();
}

TEST(DtypeConversion, ValuesBelowTheSmallestSubnormalRoundToZero) {
  EXPECT_EQ(Convert(DType::kFloat32, DType::kFloat16, FloatToBits(0x1p-26f)), 0u);
  EXPECT_EQ(Convert(DType::kFloat32, DType::kFloat16, FloatToBits(-0x1p-26f)), 0x8000u);
  EXPECT_EQ(Convert(DType::kFloat32, DType::kFloat16, FloatToBits(0x1p-24f)), 1u);
}

}  // namespace
}  // namespace ckptspec
