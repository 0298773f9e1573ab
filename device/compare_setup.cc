#include "device/compare_setup.h"

#include <cmath>
#include <string>

namespace ckptspec {
namespace device {

namespace {

constexpr int kMaxThreads = 256;

std::string AxisField(const char* field, int axis) {
  return std::string(field) + "[" + std::to_string(axis) + "]";
}

bool MulOverflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

void DefaultTolerances(DType dtype, double* rtol, double* atol) {
  switch (dtype) {
    case DType::kFloat32:
      *rtol = 1.3e-6;
      *atol = 1e-5;
      return;
    case DType::kFloat16:
      *rtol = 1e-3;
      *atol = 1e-5;
      return;
    case DType::kBFloat16:
      *rtol = 1.6e-2;
      *atol = 1e-5;
      return;
    default:
      *rtol = 0;
      *atol = 0;
      return;  // torch's table has no entry: exact
  }
}

Status ValidateDType(int32_t dtype, DType* out) {
  if (dtype < 0 || dtype >= kNumDTypes) {
    return Status::InvalidArgument("dtype " + std::to_string(dtype) +
                                   " is not a ckptspec dtype (0=fp32 .. 6=int64)");
  }
  *out = static_cast<DType>(dtype);
  return Status::OK();
}

Status ValidateOptions(const ckptspec_compare_options& options, DType* dtype,
                       CompareParams* params) {
  CKPTSPEC_RETURN_IF_ERROR(ValidateDType(options.dtype, dtype));
  if (options.mode < CKPTSPEC_COMPARE_BITWISE || options.mode > CKPTSPEC_COMPARE_TOLERANCE) {
    return Status::InvalidArgument("mode " + std::to_string(options.mode) +
                                   " is not a comparison mode (0=bitwise, 1=ulp, 2=tolerance)");
  }
  if (!std::isfinite(options.rtol) || options.rtol < 0) {
    return Status::InvalidArgument("rtol " + std::to_string(options.rtol) +
                                   " must be finite and >= 0");
  }
  if (!std::isfinite(options.atol) || options.atol < 0) {
    return Status::InvalidArgument("atol " + std::to_string(options.atol) +
                                   " must be finite and >= 0");
  }
  if (options.threads < 0 || options.threads > kMaxThreads) {
    return Status::InvalidArgument("threads " + std::to_string(options.threads) +
                                   " must be in 0.." + std::to_string(kMaxThreads));
  }
  params->mode = static_cast<CompareMode>(options.mode);
  params->equal_nan = options.equal_nan != 0;
  params->max_ulp = options.max_ulp;
  params->rtol = options.rtol;
  params->atol = options.atol;
  return Status::OK();
}

Status MakeIndexer(const ckptspec_shard_geometry& g, ShardIndexer* indexer) {
  if (g.rank < 0 || g.rank > CKPTSPEC_DEVICE_MAX_RANK) {
    return Status::InvalidArgument("geometry rank " + std::to_string(g.rank) + " is not in 0.." +
                                   std::to_string(CKPTSPEC_DEVICE_MAX_RANK));
  }
  if (g.reserved != 0) return Status::InvalidArgument("geometry reserved field must be 0");
  ShardIndexer ix{};
  ix.rank = g.rank;
  int64_t global_volume = 1;
  int64_t local_volume = 1;
  for (int a = 0; a < g.rank; ++a) {
    if (g.global_shape[a] < 0) {
      return Status::InvalidArgument(AxisField("global_shape", a) + " = " +
                                     std::to_string(g.global_shape[a]) + " is negative");
    }
    if (g.local_shape[a] < 0) {
      return Status::InvalidArgument(AxisField("local_shape", a) + " = " +
                                     std::to_string(g.local_shape[a]) + " is negative");
    }
    if (g.offset[a] < 0 || g.offset[a] > g.global_shape[a] ||
        g.local_shape[a] > g.global_shape[a] - g.offset[a]) {
      return Status::InvalidArgument(
          "axis " + std::to_string(a) + ": offset " + std::to_string(g.offset[a]) +
          " + local extent " + std::to_string(g.local_shape[a]) +
          " does not fit in global extent " + std::to_string(g.global_shape[a]));
    }
    if (MulOverflows(global_volume, g.global_shape[a], &global_volume)) {
      return Status::InvalidArgument("global_shape volume overflows int64");
    }
    local_volume *= g.local_shape[a];  // <= the global volume, so no overflow
  }
  ix.count = local_volume;
  // Global strides, the base index, and whether local strides equal global strides on every axis
  // that has more than one element (then the shard is one run of consecutive global indices).
  int64_t global_stride = 1;
  int64_t local_stride = 1;
  uint64_t base = 0;
  bool contiguous = true;
  for (int a = g.rank - 1; a >= 0; --a) {
    ix.local_shape[a] = g.local_shape[a];
    ix.global_stride[a] = global_stride;
    base += static_cast<uint64_t>(g.offset[a]) * static_cast<uint64_t>(global_stride);
    if (g.local_shape[a] > 1 && local_stride != global_stride) contiguous = false;
    global_stride *= g.global_shape[a];
    local_stride *= g.local_shape[a];
  }
  ix.base = local_volume == 0 ? 0 : base;
  ix.contiguous = contiguous;
  ix.run_length = contiguous ? local_volume : (g.rank > 0 ? g.local_shape[g.rank - 1] : 1);
  *indexer = ix;
  return Status::OK();
}

int ThreadsFor(const ckptspec_compare_options& options) {
  return options.threads == 0 ? 2 : options.threads;
}

ckptspec_compare_report FinishReport(const CompareAccumulator& acc,
                                     const ckptspec_shard_geometry& geometry,
                                     const ShardIndexer& indexer) {
  ckptspec_compare_report r{};
  r.element_count = static_cast<uint64_t>(indexer.count);
  r.value_mismatches = acc.mismatches[kValueMismatch];
  r.nan_mismatches = acc.mismatches[kNaNMismatch];
  r.inf_mismatches = acc.mismatches[kInfMismatch];
  r.signed_zero_mismatches = acc.mismatches[kSignedZeroMismatch];
  r.mismatch_count =
      r.value_mismatches + r.nan_mismatches + r.inf_mismatches + r.signed_zero_mismatches;
  r.rank = geometry.rank;
  r.first_mismatch_index = -1;
  r.first_mismatch_global_index = -1;
  if (acc.first_mismatch != kNoIndex) {
    r.first_mismatch_index = acc.first_mismatch;
    r.first_mismatch_global_index = static_cast<int64_t>(indexer.GlobalIndexOf(acc.first_mismatch));
    int64_t rest = acc.first_mismatch;
    for (int a = geometry.rank - 1; a >= 0; --a) {
      r.first_mismatch_coord[a] = geometry.offset[a] + rest % geometry.local_shape[a];
      rest /= geometry.local_shape[a];
    }
  }
  auto index_or_none = [](int64_t i) { return i == kNoIndex ? int64_t{-1} : i; };
  r.max_abs_error = acc.max_abs;
  r.max_abs_error_index = index_or_none(acc.max_abs_index);
  r.max_rel_error = acc.max_rel;
  r.max_rel_error_index = index_or_none(acc.max_rel_index);
  r.max_ulp_error = acc.max_ulp;
  r.max_ulp_error_index = index_or_none(acc.max_ulp_index);
  r.actual_checksum = acc.checksum_actual;
  r.expected_checksum = acc.checksum_expected;
  return r;
}

}  // namespace device
}  // namespace ckptspec
