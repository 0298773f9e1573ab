#include "targets/device_load/tensor_check.h"

#include "device/compare_host.h"
#include "device/compare_setup.h"
#include "model/content.h"

#if CKPTSPEC_DEVICE_HAVE_CUDA
#include "device/compare_cuda.h"
#endif

namespace ckptspec {

namespace {

std::string Who(const LoadedTensor& t) {
  return "rank " + std::to_string(t.rank) + " tensor '" + t.spec.key + "'";
}

Status OptionsFor(DType dtype, const CheckOptions& in, ckptspec_compare_options* out) {
  DType checked;
  CKPTSPEC_RETURN_IF_ERROR(device::ValidateDType(static_cast<int32_t>(dtype), &checked));
  *out = ckptspec_compare_options{};
  out->dtype = static_cast<int32_t>(dtype);
  device::DefaultTolerances(dtype, &out->rtol, &out->atol);
  out->mode = in.mode;
  out->max_ulp = in.max_ulp;
  if (in.rtol >= 0) out->rtol = in.rtol;
  if (in.atol >= 0) out->atol = in.atol;
  out->equal_nan = in.equal_nan ? 1 : 0;
  out->threads = in.threads;
  return Status::OK();
}

Status CheckBuffer(const LoadedTensor& t) {
  if (t.buffer == nullptr) return Status::InvalidArgument(Who(t) + ": no buffer");
  const uint64_t want = static_cast<uint64_t>(Volume(t.spec.local_shape)) *
                        static_cast<uint64_t>(DTypeSize(t.spec.dtype));
  if (t.buffer->size() != want) {
    return Status::InvalidArgument(Who(t) + ": buffer holds " + std::to_string(t.buffer->size()) +
                                   " bytes, its shard needs " + std::to_string(want));
  }
  return Status::OK();
}

// Compares one shard; `expected` null means generated from (seed, KeyHash(key)).
Status CheckOne(const LoadedTensor& actual, const LoadedTensor* expected, uint64_t seed,
                const CheckOptions& options, TensorCheck* check) {
  CKPTSPEC_RETURN_IF_ERROR(CheckBuffer(actual));
  ckptspec_shard_geometry geometry;
  Status s = ShardGeometryOf(actual.spec, &geometry);
  if (!s.ok()) return s.WithContext(Who(actual));
  ckptspec_compare_options opts;
  CKPTSPEC_RETURN_IF_ERROR(OptionsFor(actual.spec.dtype, options, &opts));
  const void* a = actual.buffer->data();
  const void* e = expected ? expected->buffer->data() : nullptr;
  const uint64_t key_hash = KeyHash(actual.spec.key);
  check->rank = actual.rank;
  check->key = actual.spec.key;
  if (actual.buffer->kind() == MemoryKind::kHost) {
    s = expected ? device::CompareHostBuffers(a, e, geometry, opts, &check->report)
                 : device::CompareHostGenerated(a, seed, key_hash, geometry, opts, &check->report);
  } else {
#if CKPTSPEC_DEVICE_HAVE_CUDA
    CKPTSPEC_RETURN_IF_ERROR(CudaAvailable());
    s = expected
            ? device::CompareDeviceBuffers(a, e, geometry, opts, &check->report)
            : device::CompareDeviceGenerated(a, seed, key_hash, geometry, opts, &check->report);
#else
    s = CudaAvailable();
#endif
  }
  if (!s.ok()) return s.WithContext(Who(actual));
  return Status::OK();
}

}  // namespace

Status ShardGeometryOf(const TensorSpec& spec, ckptspec_shard_geometry* geometry) {
  if (geometry == nullptr) return Status::InvalidArgument("geometry is null");
  CKPTSPEC_RETURN_IF_ERROR(ValidateTensorSpec(spec));
  const Box box = spec.box();
  const int rank = box.rank();
  if (rank > CKPTSPEC_DEVICE_MAX_RANK) {
    return Status::NotSupported("tensor '" + spec.key + "' has " + std::to_string(rank) +
                                " axes; the device checks handle at most " +
                                std::to_string(CKPTSPEC_DEVICE_MAX_RANK));
  }
  *geometry = ckptspec_shard_geometry{};
  geometry->rank = rank;
  for (int a = 0; a < rank; ++a) {
    geometry->global_shape[a] = spec.global_shape[a];
    geometry->offset[a] = box.offset[a];
    geometry->local_shape[a] = box.shape[a];
  }
  return Status::OK();
}

Status CheckGenerated(const std::vector<LoadedTensor>& tensors, uint64_t seed,
                      const CheckOptions& options, std::vector<TensorCheck>* checks) {
  if (checks == nullptr) return Status::InvalidArgument("checks is null");
  std::vector<TensorCheck> out(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    CKPTSPEC_RETURN_IF_ERROR(CheckOne(tensors[i], nullptr, seed, options, &out[i]));
  }
  *checks = std::move(out);
  return Status::OK();
}

Status CheckAgainst(const std::vector<LoadedTensor>& actual,
                    const std::vector<LoadedTensor>& expected, const CheckOptions& options,
                    std::vector<TensorCheck>* checks) {
  if (checks == nullptr) return Status::InvalidArgument("checks is null");
  if (actual.size() != expected.size()) {
    return Status::InvalidArgument("actual has " + std::to_string(actual.size()) +
                                   " tensors, expected " + std::to_string(expected.size()));
  }
  std::vector<TensorCheck> out(actual.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    const LoadedTensor& a = actual[i];
    const LoadedTensor& e = expected[i];
    CKPTSPEC_RETURN_IF_ERROR(CheckBuffer(e));
    if (a.rank != e.rank || a.spec.key != e.spec.key || a.spec.dtype != e.spec.dtype ||
        a.spec.global_shape != e.spec.global_shape || !(a.spec.box() == e.spec.box())) {
      return Status::InvalidArgument("tensor " + std::to_string(i) + ": " + Who(a) + " " +
                                     BoxToString(a.spec.box()) + " is not the same shard as " +
                                     Who(e) + " " + BoxToString(e.spec.box()));
    }
    if (a.buffer != nullptr && a.buffer->kind() != e.buffer->kind()) {
      return Status::InvalidArgument(Who(a) + ": actual in " + MemoryKindName(a.buffer->kind()) +
                                     " memory, expected in " + MemoryKindName(e.buffer->kind()));
    }
    CKPTSPEC_RETURN_IF_ERROR(CheckOne(a, &e, 0, options, &out[i]));
  }
  *checks = std::move(out);
  return Status::OK();
}

bool AllMatch(const std::vector<TensorCheck>& checks) {
  for (const TensorCheck& c : checks) {
    if (c.report.mismatch_count != 0) return false;
  }
  return true;
}

std::string DescribeCheck(const TensorCheck& check) {
  const ckptspec_compare_report& r = check.report;
  std::string s = "rank " + std::to_string(check.rank) + " '" + check.key + "': ";
  if (r.mismatch_count == 0) return s + "ok";
  return s + std::to_string(r.mismatch_count) + " mismatches (value " +
         std::to_string(r.value_mismatches) + ", nan " + std::to_string(r.nan_mismatches) +
         ", inf " + std::to_string(r.inf_mismatches) + ", signed zero " +
         std::to_string(r.signed_zero_mismatches) + "), first at global index " +
         std::to_string(r.first_mismatch_global_index);
}

}  // namespace ckptspec
