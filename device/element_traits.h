// Bit-level facts about each element type, for host and CUDA device (CKPTSPEC_HD): the storage
// word, and for floating types the NaN / infinity / zero tests and the ordered-integer image used
// for ULP distances.
//
// Contracts:
//  - Bits<D> is the unsigned word holding one element of D; element bit patterns are handled
//    zero-extended to 64 bits elsewhere.
//  - For floating D: IsNaN/IsInf/IsZero classify a bit pattern exactly as PyTorch does (fp8 e4m3fn
//    has no infinity and NaN only at S.1111.111).
//  - UlpDistance(a, b): floating types map a pattern with sign s and magnitude bits m to the
//    integer (s ? -m : m) and return the absolute difference, so adjacent representable values
//    are 1 apart, +0 and -0 are 0 apart, and the smallest subnormals of either sign are 2 apart.
//    Integer types return |a - b| exactly as an unsigned 64-bit value.
#pragma once

#include <cstdint>

#include "model/dtype.h"
#include "model/host_device.h"

namespace ckptspec {
namespace device {

template <DType D>
struct ElementTraits;

template <>
struct ElementTraits<DType::kFloat32> {
  using Bits = uint32_t;
  static constexpr bool kFloating = true;
  static constexpr int kExp = 8, kMan = 23;
  static constexpr bool kIeee = true;
};
template <>
struct ElementTraits<DType::kBFloat16> {
  using Bits = uint16_t;
  static constexpr bool kFloating = true;
  static constexpr int kExp = 8, kMan = 7;
  static constexpr bool kIeee = true;
};
template <>
struct ElementTraits<DType::kFloat16> {
  using Bits = uint16_t;
  static constexpr bool kFloating = true;
  static constexpr int kExp = 5, kMan = 10;
  static constexpr bool kIeee = true;
};
template <>
struct ElementTraits<DType::kFloat8E4M3> {
  using Bits = uint8_t;
  static constexpr bool kFloating = true;
  static constexpr int kExp = 4, kMan = 3;
  static constexpr bool kIeee = false;  // e4m3fn: no infinities, NaN only with all bits set
};
template <>
struct ElementTraits<DType::kFloat8E5M2> {
  using Bits = uint8_t;
  static constexpr bool kFloating = true;
  static constexpr int kExp = 5, kMan = 2;
  static constexpr bool kIeee = true;
};
template <>
struct ElementTraits<DType::kInt32> {
  using Bits = uint32_t;
  using Signed = int32_t;
  static constexpr bool kFloating = false;
};
template <>
struct ElementTraits<DType::kInt64> {
  using Bits = uint64_t;
  using Signed = int64_t;
  static constexpr bool kFloating = false;
};

template <DType D>
using Bits = typename ElementTraits<D>::Bits;

// Floating-type masks.
template <DType D>
struct FloatMasks {
  using T = ElementTraits<D>;
  static constexpr uint64_t kMagnitude = (uint64_t{1} << (T::kExp + T::kMan)) - 1;
  static constexpr uint64_t kSign = uint64_t{1} << (T::kExp + T::kMan);
  static constexpr uint64_t kExpField = ((uint64_t{1} << T::kExp) - 1) << T::kMan;
};

template <DType D>
CKPTSPEC_HD inline bool IsNaN(uint64_t bits) {
  using M = FloatMasks<D>;
  const uint64_t magnitude = bits & M::kMagnitude;
  if (ElementTraits<D>::kIeee) return magnitude > M::kExpField;
  return magnitude == M::kMagnitude;
}

template <DType D>
CKPTSPEC_HD inline bool IsInf(uint64_t bits) {
  using M = FloatMasks<D>;
  return ElementTraits<D>::kIeee && (bits & M::kMagnitude) == M::kExpField;
}

template <DType D>
CKPTSPEC_HD inline bool IsZero(uint64_t bits) {
  return (bits & FloatMasks<D>::kMagnitude) == 0;
}

template <DType D>
CKPTSPEC_HD inline uint64_t UlpDistance(uint64_t a, uint64_t b) {
  if constexpr (ElementTraits<D>::kFloating) {
    using M = FloatMasks<D>;
    const int64_t ia = (a & M::kSign) ? -static_cast<int64_t>(a & M::kMagnitude)
                                      : static_cast<int64_t>(a & M::kMagnitude);
    const int64_t ib = (b & M::kSign) ? -static_cast<int64_t>(b & M::kMagnitude)
                                      : static_cast<int64_t>(b & M::kMagnitude);
    return ia >= ib ? static_cast<uint64_t>(ia - ib) : static_cast<uint64_t>(ib - ia);
  } else {
    using S = typename ElementTraits<D>::Signed;
    const S sa = static_cast<S>(static_cast<typename ElementTraits<D>::Bits>(a));
    const S sb = static_cast<S>(static_cast<typename ElementTraits<D>::Bits>(b));
    // Unsigned subtraction of the larger minus the smaller is exact modulo 2^64 and < 2^64.
    return sa >= sb ? static_cast<uint64_t>(static_cast<int64_t>(sa)) -
                          static_cast<uint64_t>(static_cast<int64_t>(sb))
                    : static_cast<uint64_t>(static_cast<int64_t>(sb)) -
                          static_cast<uint64_t>(static_cast<int64_t>(sa));
  }
}

}  // namespace device
}  // namespace ckptspec
