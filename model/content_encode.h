// Fast, exact encoding of the content generator's unit values (ContentUnitFloat) into each dtype,
// for host and CUDA device (CKPTSPEC_HD).
//
// ContentUnitFloat yields only the 2^24 values r * 2^-23 with integer r in [-2^23, 2^23). For
// them the generic round-to-nearest-even encoder (NarrowFloat::Encode) reduces to branch-free
// integer arithmetic, which the host compiler vectorizes:
//  - values in the target's normal range: drop the low 23 - kMan bits of the fp32 pattern with
//    the add-(half - 1)-plus-lsb trick (exact RNE for finite inputs; a carry out of the mantissa
//    bumps the exponent, as it must), then rebias the exponent field;
//  - values in the target's subnormal range: the target mantissa is |r| * 2^(kBias + kMan - 24),
//    a constant shift of |r| (exact for fp16, rounded to nearest even with the same trick for the
//    fp8 formats; bf16 has no subnormals in this domain, only zero lands there);
//  - no overflow, infinity or NaN is possible (|value| <= 1).
//
// Contract: EncodeContentUnit(dtype, bits) == EncodeFloat(dtype, ContentUnitFloat(bits)) for every
// 64-bit `bits` and every dtype, bit for bit. content_encode_test.cc checks all 2^24 values for
// every floating dtype against the generic encoder.
#pragma once

#include <cstdint>

#include "model/dtype.h"
#include "model/float_codec.h"
#include "model/host_device.h"

namespace ckptspec {

// ContentUnitFloat's integer numerator: r in [-2^23, 2^23), the value being r * 2^-23.
CKPTSPEC_HD inline int32_t ContentUnitNumerator(uint64_t bits) {
  return static_cast<int32_t>(bits >> 40) - (1 << 23);
}

namespace detail {

// NarrowFloat<kExp, kMan, kIeee>::Encode(r * 2^-23), for |r| <= 2^23.
template <int kExp, int kMan, bool kIeee>
CKPTSPEC_HD inline uint32_t EncodeUnitNarrow(int32_t r) {
  using Codec = NarrowFloat<kExp, kMan, kIeee>;
  constexpr int kBias = Codec::kBias;
  constexpr int kDrop = 23 - kMan;  // fp32 mantissa bits the target drops
  const uint32_t fbits = FloatToBits(static_cast<float>(r) * (1.0f / 8388608.0f));  // exact
  const uint32_t sign = (fbits >> 31) << Codec::kSignShift;
  const uint32_t abs = fbits & 0x7FFFFFFFu;
  const uint32_t a = static_cast<uint32_t>(r < 0 ? -r : r);  // |r| <= 2^23: no overflow

  // Normal range: round the fp32 pattern to kMan mantissa bits, then rebias 127 -> kBias.
  const uint32_t rounded = abs + ((1u << (kDrop - 1)) - 1u) + ((abs >> kDrop) & 1u);
  const uint32_t normal = (rounded >> kDrop) - (static_cast<uint32_t>(127 - kBias) << kMan);

  // Subnormal range: value / quantum = a * 2^-kShift with quantum 2^(1 - kBias - kMan). A result
  // of 2^kMan (rounding up into the normal range) is the smallest normal's pattern, as it must be.
  constexpr int kShift = 24 - kBias - kMan;
  uint32_t subnormal;
  if constexpr (kShift > 0) {
    subnormal = (a + ((1u << (kShift - 1)) - 1u) + ((a >> kShift) & 1u)) >> kShift;
  } else if constexpr (-kShift < 24) {
    // value < 2^(1 - kBias), i.e. a < 2^(24 - kBias): a << -kShift < 2^kMan, no bit is lost.
    subnormal = a << -kShift;
  } else {
    subnormal = 0;  // only a == 0 is below the normal range
  }
  const bool is_normal = abs >= (static_cast<uint32_t>(127 + 1 - kBias) << 23);
  return sign | (is_normal ? normal : subnormal);
}

}  // namespace detail

// The element bits (zero-extended) of ContentUnitFloat(bits) in floating `dtype`; see the contract
// above. For an integer dtype it defers to EncodeFloat (the generator never uses that path).
CKPTSPEC_HD inline uint64_t EncodeContentUnit(DType dtype, uint64_t bits) {
  const int32_t r = ContentUnitNumerator(bits);
  switch (dtype) {
    case DType::kFloat32:
      return FloatToBits(static_cast<float>(r) * (1.0f / 8388608.0f));
    case DType::kBFloat16:
      return detail::EncodeUnitNarrow<8, 7, true>(r);
    case DType::kFloat16:
      return detail::EncodeUnitNarrow<5, 10, true>(r);
    case DType::kFloat8E4M3:
      return detail::EncodeUnitNarrow<4, 3, false>(r);
    case DType::kFloat8E5M2:
      return detail::EncodeUnitNarrow<5, 2, true>(r);
    default:
      return EncodeFloat(dtype, static_cast<float>(r) * (1.0f / 8388608.0f));
  }
}

}  // namespace ckptspec
