// The per-element comparison, written once for the CUDA kernels and the CPU twin (CKPTSPEC_HD):
// classifies one (actual, expected) pair under the comparison mode, measures its errors, and adds
// it to a CompareAccumulator. Semantics are specified in device/ckptspec_device.h.
#pragma once

#include <cmath>
#include <cstdint>

#include "device/compare_accumulator.h"
#include "device/element_traits.h"
#include "model/content.h"
#include "model/dtype.h"
#include "model/float_codec.h"
#include "model/host_device.h"

namespace ckptspec {
namespace device {

enum class CompareMode : int32_t { kBitwise = 0, kUlp = 1, kTolerance = 2 };

// Validated comparison parameters (see compare_setup.h).
struct CompareParams {
  CompareMode mode;
  bool equal_nan;
  uint64_t max_ulp;
  double rtol;
  double atol;
};

// Salt of the order-independent checksum: term = Mix64(bits ^ (global_index * kChecksumSalt)).
inline constexpr uint64_t kChecksumSalt = 0x9E3779B97F4A7C15ull;

CKPTSPEC_HD inline uint64_t ChecksumTerm(uint64_t bits, uint64_t global_index) {
  return Mix64(bits ^ (global_index * kChecksumSalt));
}

// atol + rtol * |expected|, with the product rounded before the sum on host and device alike
// (nvcc would otherwise contract it into an FMA and the twins could differ in the last bit).
CKPTSPEC_HD inline double ToleranceBound(double rtol, double abs_expected, double atol) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(__dmul_rn(rtol, abs_expected), atol);
#else
  const volatile double product = rtol * abs_expected;  // keeps host compilers from contracting
  return product + atol;
#endif
}

CKPTSPEC_HD inline void RecordErrors(double abs_error, double rel_error, uint64_t ulp_error,
                                     int64_t local_index, CompareAccumulator* acc) {
  UpdateMax(abs_error, local_index, &acc->max_abs, &acc->max_abs_index);
  UpdateMax(rel_error, local_index, &acc->max_rel, &acc->max_rel_index);
  UpdateMax(ulp_error, local_index, &acc->max_ulp, &acc->max_ulp_index);
}

// The slow path: a pair whose bit patterns differ, or NaNs.
template <DType D>
CKPTSPEC_HD inline void CompareDiffering(uint64_t a, uint64_t e, int64_t local_index,
                                         const CompareParams& p, CompareAccumulator* acc) {
  if constexpr (ElementTraits<D>::kFloating) {
    const bool a_nan = IsNaN<D>(a);
    const bool e_nan = IsNaN<D>(e);
    if (a_nan || e_nan) {
      const bool match = a_nan && e_nan && (p.mode == CompareMode::kBitwise ? a == e : p.equal_nan);
      if (!match) RecordMismatch(kNaNMismatch, local_index, acc);
      return;
    }
    if (IsInf<D>(a) || IsInf<D>(e)) {
      if (a != e) RecordMismatch(kInfMismatch, local_index, acc);
      return;
    }
    if (a == e) return;
    const double da = DecodeToDouble(D, a);
    const double de = DecodeToDouble(D, e);
    const double abs_error = fabs(da - de);
    const double abs_expected = fabs(de);
    const double rel_error =
        abs_expected != 0 ? abs_error / abs_expected : (abs_error == 0 ? 0.0 : INFINITY);
    const uint64_t ulp_error = UlpDistance<D>(a, e);
    RecordErrors(abs_error, rel_error, ulp_error, local_index, acc);
    bool match = false;
    switch (p.mode) {
      case CompareMode::kBitwise:
        match = false;
        break;
      case CompareMode::kUlp:
        match = ulp_error <= p.max_ulp;
        break;
      case CompareMode::kTolerance:
        match = abs_error <= ToleranceBound(p.rtol, abs_expected, p.atol);
        break;
    }
    if (!match) {
      const bool signed_zero = IsZero<D>(a) && IsZero<D>(e);
      RecordMismatch(signed_zero ? kSignedZeroMismatch : kValueMismatch, local_index, acc);
    }
  } else {
    if (a == e) return;
    const uint64_t distance = UlpDistance<D>(a, e);
    const double abs_error = static_cast<double>(distance);
    const double de = DecodeToDouble(D, e);
    const double abs_expected = fabs(de);
    const double rel_error = abs_expected != 0 ? abs_error / abs_expected : INFINITY;
    RecordErrors(abs_error, rel_error, distance, local_index, acc);
    bool match = false;
    switch (p.mode) {
      case CompareMode::kBitwise:
        match = false;
        break;
      case CompareMode::kUlp:
        match = distance <= p.max_ulp;
        break;
      case CompareMode::kTolerance:
        match = abs_error <= ToleranceBound(p.rtol, abs_expected, p.atol);
        break;
    }
    if (!match) RecordMismatch(kValueMismatch, local_index, acc);
  }
}

// Classifies one element and records its errors, without touching the checksums.
template <DType D>
CKPTSPEC_HD inline void ClassifyElement(uint64_t a, uint64_t e, int64_t local_index,
                                        const CompareParams& p, CompareAccumulator* acc) {
  if (a == e) {
    // Equal patterns match in every mode and have zero error -- except NaNs, which the
    // ULP/TOLERANCE modes match only under equal_nan.
    if constexpr (ElementTraits<D>::kFloating) {
      if (p.mode != CompareMode::kBitwise && !p.equal_nan && IsNaN<D>(a)) {
        RecordMismatch(kNaNMismatch, local_index, acc);
      }
    }
    return;
  }
  CompareDiffering<D>(a, e, local_index, p, acc);
}

// True when ClassifyElement could record anything for an element whose patterns are equal:
// a NaN in a mode that matches NaNs only under equal_nan.
CKPTSPEC_HD inline bool EqualNaNsMismatch(const CompareParams& p) {
  return p.mode != CompareMode::kBitwise && !p.equal_nan;
}

// Adds one element: `a` and `e` are the actual and expected bit patterns (zero-extended),
// `local_index` its position in the shard, `global_index` its position in the global tensor.
template <DType D>
CKPTSPEC_HD inline void AccumulateElement(uint64_t a, uint64_t e, int64_t local_index,
                                          uint64_t global_index, const CompareParams& p,
                                          CompareAccumulator* acc) {
  const uint64_t salt = global_index * kChecksumSalt;
  const uint64_t term_actual = Mix64(a ^ salt);
  acc->checksum_actual += term_actual;
  acc->checksum_expected += a == e ? term_actual : Mix64(e ^ salt);
  ClassifyElement<D>(a, e, local_index, p, acc);
}

}  // namespace device
}  // namespace ckptspec
