// Exact conversions between fp32 and the narrow floating types, for host and CUDA device.
//
// Contracts:
//  - Decoding (narrow -> fp32) is exact for every bit pattern: each finite narrow value is
//    representable in fp32; infinities stay infinities; NaNs become fp32 NaNs of the same sign.
//  - Encoding (fp32 -> narrow) rounds to nearest, ties to even, including into the subnormal
//    range. Overflow gives infinity for the IEEE-like formats (bf16, fp16, fp8 e5m2) and NaN for
//    fp8 e4m3fn, which has no infinity (the behaviour of PyTorch's c10 conversions). NaN input
//    gives that format's canonical quiet NaN with the input's sign.
//  - Encode(Decode(x)) == x for every non-NaN pattern x (round trip is the identity).
#pragma once

#include <cstdint>
#include <cstring>

#include "model/dtype.h"
#include "model/host_device.h"

namespace ckptspec {

CKPTSPEC_HD inline uint32_t FloatToBits(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
}

CKPTSPEC_HD inline float BitsToFloat(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

namespace detail {

// A narrow binary floating format with kExp exponent bits and kMan mantissa bits.
// kIeee: the all-ones exponent encodes inf/NaN (IEEE 754 style). Otherwise ("fn" formats such as
// e4m3fn) the all-ones exponent holds finite values and only the all-ones pattern is NaN.
template <int kExp, int kMan, bool kIeee>
struct NarrowFloat {
  static constexpr int kBias = (1 << (kExp - 1)) - 1;
  static constexpr uint32_t kExpMask = (1u << kExp) - 1;
  static constexpr uint32_t kManMask = (1u << kMan) - 1;
  static constexpr uint32_t kSignShift = kExp + kMan;
  // Canonical quiet NaN without sign: IEEE formats set the top mantissa bit; fn formats use all ones.
  static constexpr uint32_t kNaN =
      kIeee ? ((kExpMask << kMan) | (1u << (kMan - 1))) : ((kExpMask << kMan) | kManMask);
  static constexpr uint32_t kInf = kExpMask << kMan;

  CKPTSPEC_HD static uint32_t Encode(float f) {
    const uint32_t bits = FloatToBits(f);
    const uint32_t sign = (bits >> 31) << kSignShift;
    const uint32_t abs = bits & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return sign | kNaN;
    if (abs == 0x7F800000u) return sign | (kIeee ? kInf : kNaN);
    if (abs == 0) return sign;

    // abs = significand * 2^(exponent - 23), with significand < 2^24.
    int exponent;
    uint32_t significand;
    if ((abs >> 23) == 0) {  // fp32 subnormal
      exponent = -126;
      significand = abs;
    } else {
      exponent = static_cast<int>(abs >> 23) - 127;
      significand = (abs & 0x7FFFFFu) | 0x800000u;
    }
    // floor(log2(abs)) for normal inputs is `exponent`; the target's quantum there is
    // 2^(max(exponent, 1 - bias) - kMan). Drop `shift` low bits of the significand, rounding to
    // nearest even.
    const int min_exponent = 1 - kBias;
    const int quantum_exponent = (exponent > min_exponent ? exponent : min_exponent) - kMan;
    const int shift = quantum_exponent - (exponent - 23);  // >= 23 - kMan > 0
    uint64_t q;
    if (shift >= 26) {
      q = 0;  // below half the smallest subnormal
    } else {
      const uint64_t sig = significand;
      q = sig >> shift;
      const uint64_t rem = sig & ((uint64_t{1} << shift) - 1);
      const uint64_t half = uint64_t{1} << (shift - 1);
      if (rem > half || (rem == half && (q & 1))) ++q;
    }
    // q is a multiple of the quantum. Below 2^kMan it is a subnormal of the target.
    uint32_t field;
    uint32_t mantissa;
    if (q < (uint64_t{1} << kMan)) {
      field = 0;
      mantissa = static_cast<uint32_t>(q);
    } else {
      int e = quantum_exponent + kMan;
      if (q >= (uint64_t{1} << (kMan + 1))) {  // rounding carried into the next binade
        q >>= 1;
        ++e;
      }
      const int biased = e + kBias;
      mantissa = static_cast<uint32_t>(q) & kManMask;
      if (kIeee) {
        if (biased >= static_cast<int>(kExpMask)) return sign | kInf;
      } else {
        if (biased > static_cast<int>(kExpMask) ||
            (biased == static_cast<int>(kExpMask) && mantissa == kManMask)) {
          return sign | kNaN;
        }
      }
      field = static_cast<uint32_t>(biased);
    }
    return sign | (field << kMan) | mantissa;
  }

  CKPTSPEC_HD static float Decode(uint32_t code) {
    const uint32_t sign = ((code >> kSignShift) & 1u) << 31;
    const uint32_t field = (code >> kMan) & kExpMask;
    const uint32_t mantissa = code & kManMask;
    if (kIeee && field == kExpMask) {
      return BitsToFloat(sign | (mantissa == 0 ? 0x7F800000u : 0x7FC00000u));
    }
    if (!kIeee && field == kExpMask && mantissa == kManMask) {
      return BitsToFloat(sign | 0x7FC00000u);
    }
    if (field == 0) {
      // mantissa * 2^(1 - bias - kMan): exact in fp32 (the scale is a normal fp32 power of two
      // for every format here except bf16, whose subnormals are fp32 subnormals).
      if (kExp == 8) return BitsToFloat(sign | (mantissa << (23 - kMan)));
      const float scale = BitsToFloat(static_cast<uint32_t>(127 + 1 - kBias - kMan) << 23);
      const float magnitude = static_cast<float>(mantissa) * scale;
      return BitsToFloat(sign | FloatToBits(magnitude));
    }
    const uint32_t fp32_exponent = field - kBias + 127;
    return BitsToFloat(sign | (fp32_exponent << 23) | (mantissa << (23 - kMan)));
  }
};

}  // namespace detail

using BFloat16Codec = detail::NarrowFloat<8, 7, true>;
using Float16Codec = detail::NarrowFloat<5, 10, true>;
using Float8E4M3Codec = detail::NarrowFloat<4, 3, false>;
using Float8E5M2Codec = detail::NarrowFloat<5, 2, true>;

// fp32 -> the element's bit pattern in `dtype` (zero-extended). For the integer dtypes, `f` is
// truncated toward zero and saturated; NaN gives 0.
CKPTSPEC_HD inline uint64_t EncodeFloat(DType dtype, float f) {
  switch (dtype) {
    case DType::kFloat32:
      return FloatToBits(f);
    case DType::kBFloat16:
      return BFloat16Codec::Encode(f);
    case DType::kFloat16:
      return Float16Codec::Encode(f);
    case DType::kFloat8E4M3:
      return Float8E4M3Codec::Encode(f);
    case DType::kFloat8E5M2:
      return Float8E5M2Codec::Encode(f);
    case DType::kInt32: {
      if (!(f == f)) return 0;
      if (f >= 2147483647.0f) return 0x7FFFFFFFu;
      if (f <= -2147483648.0f) return 0x80000000u;
      return static_cast<uint32_t>(static_cast<int32_t>(f));
    }
    case DType::kInt64: {
      if (!(f == f)) return 0;
      if (f >= 9.2233720368547758e18f) return 0x7FFFFFFFFFFFFFFFull;
      if (f <= -9.2233720368547758e18f) return 0x8000000000000000ull;
      return static_cast<uint64_t>(static_cast<int64_t>(f));
    }
  }
  return 0;
}

// A floating element's bit pattern -> its exact value as a double. Integer dtypes: the integer's
// value (exact for int32; int64 beyond 2^53 rounds).
CKPTSPEC_HD inline double DecodeToDouble(DType dtype, uint64_t bits) {
  switch (dtype) {
    case DType::kFloat32:
      return BitsToFloat(static_cast<uint32_t>(bits));
    case DType::kBFloat16:
      return BFloat16Codec::Decode(static_cast<uint32_t>(bits));
    case DType::kFloat16:
      return Float16Codec::Decode(static_cast<uint32_t>(bits));
    case DType::kFloat8E4M3:
      return Float8E4M3Codec::Decode(static_cast<uint32_t>(bits));
    case DType::kFloat8E5M2:
      return Float8E5M2Codec::Decode(static_cast<uint32_t>(bits));
    case DType::kInt32:
      return static_cast<int32_t>(static_cast<uint32_t>(bits));
    case DType::kInt64:
      return static_cast<double>(static_cast<int64_t>(bits));
  }
  return 0;
}

}  // namespace ckptspec
