// The partial result of comparing some elements of a shard, and the exact, commutative and
// associative merge of two partial results (CKPTSPEC_HD: used per CUDA thread, per block, per CPU
// thread). Because Merge is exact in every field -- integer sums mod 2^64, minima, and maxima whose
// ties go to the lowest index -- any split of the elements into parts, merged in any order, gives
// the same accumulator bit for bit. That is what makes GPU and CPU reports identical.
#pragma once

#include <cstdint>

#include "model/host_device.h"

namespace ckptspec {
namespace device {

// Mismatch classes; see device/ckptspec_device.h for their definitions.
enum MismatchClass : int {
  kValueMismatch = 0,
  kNaNMismatch = 1,
  kInfMismatch = 2,
  kSignedZeroMismatch = 3,
  kNumMismatchClasses = 4,
};

// "No index": larger than every real index, so minima ignore it.
inline constexpr int64_t kNoIndex = INT64_MAX;

struct CompareAccumulator {
  uint64_t mismatches[kNumMismatchClasses];
  int64_t first_mismatch;  // lowest mismatching local index, or kNoIndex
  double max_abs;          // 0 with kNoIndex until a positive error is seen
  int64_t max_abs_index;
  double max_rel;
  int64_t max_rel_index;
  uint64_t max_ulp;
  int64_t max_ulp_index;
  uint64_t checksum_actual;
  uint64_t checksum_expected;
};

CKPTSPEC_HD inline CompareAccumulator EmptyAccumulator() {
  CompareAccumulator a;
  for (int c = 0; c < kNumMismatchClasses; ++c) a.mismatches[c] = 0;
  a.first_mismatch = kNoIndex;
  a.max_abs = 0;
  a.max_abs_index = kNoIndex;
  a.max_rel = 0;
  a.max_rel_index = kNoIndex;
  a.max_ulp = 0;
  a.max_ulp_index = kNoIndex;
  a.checksum_actual = 0;
  a.checksum_expected = 0;
  return a;
}

// Keeps the larger value; on equal positive values, the lower index. Values of 0 never displace
// the "no error" state, so a maximum of 0 always has kNoIndex.
template <typename T>
CKPTSPEC_HD inline void UpdateMax(T value, int64_t index, T* max, int64_t* max_index) {
  if (value > *max || (value == *max && value > T(0) && index < *max_index)) {
    *max = value;
    *max_index = index;
  }
}

CKPTSPEC_HD inline void RecordMismatch(int mismatch_class, int64_t index, CompareAccumulator* a) {
  ++a->mismatches[mismatch_class];
  if (index < a->first_mismatch) a->first_mismatch = index;
}

// Checksums of disjoint parts combine by addition mod 2^64 (see ckptspec_checksum_combine).
CKPTSPEC_HD inline uint64_t CombineChecksums(uint64_t a, uint64_t b) { return a + b; }

CKPTSPEC_HD inline CompareAccumulator Merge(const CompareAccumulator& x,
                                            const CompareAccumulator& y) {
  CompareAccumulator r = x;
  for (int c = 0; c < kNumMismatchClasses; ++c) r.mismatches[c] += y.mismatches[c];
  if (y.first_mismatch < r.first_mismatch) r.first_mismatch = y.first_mismatch;
  UpdateMax(y.max_abs, y.max_abs_index, &r.max_abs, &r.max_abs_index);
  UpdateMax(y.max_rel, y.max_rel_index, &r.max_rel, &r.max_rel_index);
  UpdateMax(y.max_ulp, y.max_ulp_index, &r.max_ulp, &r.max_ulp_index);
  r.checksum_actual = CombineChecksums(r.checksum_actual, y.checksum_actual);
  r.checksum_expected = CombineChecksums(r.checksum_expected, y.checksum_expected);
  return r;
}

}  // namespace device
}  // namespace ckptspec
