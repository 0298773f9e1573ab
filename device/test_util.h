// Helpers shared by the device checks' tests: typed access to raw element buffers, planting
// mismatches of each class, geometry construction and report comparison. Test-only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "device/ckptspec_device.h"
#include "model/box.h"
#include "model/dtype.h"
#include "model/float_codec.h"

namespace ckptspec {
namespace device {
namespace testing {

// A host buffer of `count` elements of `dtype`, little-endian.
class ElementBuffer {
 public:
  ElementBuffer(DType dtype, int64_t count)
      : dtype_(dtype), bytes_(static_cast<size_t>(count) * DTypeSize(dtype)) {}
  DType dtype() const { return dtype_; }
  int64_t count() const { return static_cast<int64_t>(bytes_.size()) / DTypeSize(dtype_); }
  uint8_t* data() { return bytes_.data(); }
  const uint8_t* data() const { return bytes_.data(); }
  size_t size_bytes() const { return bytes_.size(); }
  uint64_t Get(int64_t i) const {
    uint64_t bits = 0;
    memcpy(&bits, bytes_.data() + i * DTypeSize(dtype_), DTypeSize(dtype_));
    return bits;
  }
  void Set(int64_t i, uint64_t bits) {
    memcpy(bytes_.data() + i * DTypeSize(dtype_), &bits, DTypeSize(dtype_));
  }

 private:
  DType dtype_;
  std::vector<uint8_t> bytes_;
};

inline bool HasInfinity(DType dtype) {
  return IsFloatingDType(dtype) && dtype != DType::kFloat8E4M3;
}

// Bit patterns of one element of `dtype` for the planted pairs.
inline uint64_t ValueBits(DType dtype, float value) {
  return IsFloatingDType(dtype) ? EncodeFloat(dtype, value)
                                : static_cast<uint64_t>(static_cast<int64_t>(value)) &
                                      (DTypeSize(dtype) == 8 ? ~uint64_t{0} : 0xFFFFFFFFull);
}
inline uint64_t NaNBits(DType dtype) { return EncodeFloat(dtype, NAN); }
inline uint64_t InfBits(DType dtype) { return EncodeFloat(dtype, INFINITY); }
inline uint64_t NegZeroBits(DType dtype) { return EncodeFloat(dtype, -0.0f); }

inline ckptspec_shard_geometry MakeGeometry(const Dims& global_shape, const Box& local) {
  ckptspec_shard_geometry g{};
  g.rank = static_cast<int32_t>(global_shape.size());
  for (int a = 0; a < g.rank; ++a) {
    g.global_shape[a] = global_shape[a];
    g.offset[a] = local.offset[a];
    g.local_shape[a] = local.shape[a];
  }
  return g;
}

inline ckptspec_shard_geometry FlatGeometry(int64_t count) {
  return MakeGeometry({count}, Box{{0}, {count}});
}

inline ckptspec_compare_options Options(DType dtype, int32_t mode = CKPTSPEC_COMPARE_BITWISE,
                                        int32_t threads = 0) {
  ckptspec_compare_options o{};
  o.dtype = static_cast<int32_t>(dtype);
  o.mode = mode;
  o.threads = threads;
  return o;
}

inline bool SameReport(const ckptspec_compare_report& a, const ckptspec_compare_report& b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

inline std::string ReportToString(const ckptspec_compare_report& r) {
  std::string s = "{count=" + std::to_string(r.element_count) +
                  " mismatches=" + std::to_string(r.mismatch_count) +
                  " value=" + std::to_string(r.value_mismatches) +
                  " nan=" + std::to_string(r.nan_mismatches) +
                  " inf=" + std::to_string(r.inf_mismatches) +
                  " signed_zero=" + std::to_string(r.signed_zero_mismatches) +
                  " first=" + std::to_string(r.first_mismatch_index) +
                  " first_global=" + std::to_string(r.first_mismatch_global_index) + " coord=(";
  for (int a = 0; a < r.rank; ++a) s += (a ? "," : "") + std::to_string(r.first_mismatch_coord[a]);
  char buf[256];
  snprintf(buf, sizeof buf,
           ") max_abs=%.17g@%lld max_rel=%.17g@%lld max_ulp=%llu@%lld checksums=%016llx/%016llx}",
           r.max_abs_error, static_cast<long long>(r.max_abs_error_index), r.max_rel_error,
           static_cast<long long>(r.max_rel_error_index),
           static_cast<unsigned long long>(r.max_ulp_error),
           static_cast<long long>(r.max_ulp_error_index),
           static_cast<unsigned long long>(r.actual_checksum),
           static_cast<unsigned long long>(r.expected_checksum));
  return s + buf;
}

}  // namespace testing
}  // namespace device
}  // namespace ckptspec

inline std::ostream& operator<<(std::ostream& os, const ckptspec_compare_report& r) {
  return os << ckptspec::device::testing::ReportToString(r);
}
