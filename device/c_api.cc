// The C ABI (ckptspec_device.h) over the CPU twin and, when built, the CUDA path. Translates
// Status into return codes and keeps the last error message per thread. No exception crosses
// this boundary.
#include <exception>
#include <string>

#include "device/ckptspec_device.h"
#include "device/compare_accumulator.h"
#include "device/compare_host.h"
#include "device/compare_setup.h"
#include "model/content.h"
#include "model/status.h"

#if CKPTSPEC_DEVICE_HAVE_CUDA
#include "device/compare_cuda.h"
#endif

namespace {

thread_local std::string last_error;

int Fail(int code, std::string message) {
  last_error = std::move(message);
  return code;
}

int ToCode(const ckptspec::Status& status) {
  using Code = ckptspec::Status::Code;
  switch (status.code()) {
    case Code::kOk:
      last_error.clear();
      return CKPTSPEC_OK;
    case Code::kInvalidArgument:
      return Fail(CKPTSPEC_INVALID_ARGUMENT, status.message());
    case Code::kFailedPrecondition:
      return Fail(CKPTSPEC_NO_CUDA, status.message());
    case Code::kIOError:
      return Fail(CKPTSPEC_CUDA_ERROR, status.message());
    default:
      return Fail(CKPTSPEC_INTERNAL, status.ToString());
  }
}

// Runs `body` (returning a Status), turning null arguments and exceptions into error codes.
template <typename Body>
int Guarded(Body body) {
  try {
    return ToCode(body());
  } catch (const std::exception& e) {
    return Fail(CKPTSPEC_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(CKPTSPEC_INTERNAL, "internal error");
  }
}

ckptspec::Status RequireNonNull(const void* p, const char* name) {
  if (p == nullptr) return ckptspec::Status::InvalidArgument(std::string(name) + " is null");
  return ckptspec::Status::OK();
}

}  // namespace

extern "C" {

int ckptspec_compare_options_init(int32_t dtype, ckptspec_compare_options* options) {
  return Guarded([&] {
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(options, "options"));
    ckptspec::DType d;
    CKPTSPEC_RETURN_IF_ERROR(ckptspec::device::ValidateDType(dtype, &d));
    *options = ckptspec_compare_options{};
    options->dtype = dtype;
    options->mode = CKPTSPEC_COMPARE_BITWISE;
    ckptspec::device::DefaultTolerances(d, &options->rtol, &options->atol);
    return ckptspec::Status::OK();
  });
}

int ckptspec_default_tolerances(int32_t dtype, double* rtol, double* atol) {
  return Guarded([&] {
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(rtol, "rtol"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(atol, "atol"));
    ckptspec::DType d;
    CKPTSPEC_RETURN_IF_ERROR(ckptspec::device::ValidateDType(dtype, &d));
    ckptspec::device::DefaultTolerances(d, rtol, atol);
    return ckptspec::Status::OK();
  });
}

int ckptspec_geometry_flat(int64_t count, ckptspec_shard_geometry* geometry) {
  return Guarded([&] {
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(geometry, "geometry"));
    if (count < 0) {
      return ckptspec::Status::InvalidArgument("count " + std::to_string(count) + " is negative");
    }
    *geometry = ckptspec_shard_geometry{};
    geometry->rank = 1;
    geometry->global_shape[0] = count;
    geometry->local_shape[0] = count;
    return ckptspec::Status::OK();
  });
}

int ckptspec_key_hash(const char* key, size_t key_length, uint64_t* hash) {
  return Guarded([&] {
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(hash, "hash"));
    if (key == nullptr && key_length > 0) {
      return ckptspec::Status::InvalidArgument("key is null but key_length is " +
                                               std::to_string(key_length));
    }
    *hash = ckptspec::KeyHash(std::string_view(key == nullptr ? "" : key, key_length));
    return ckptspec::Status::OK();
  });
}

uint64_t ckptspec_checksum_combine(uint64_t a, uint64_t b) {
  return ckptspec::device::CombineChecksums(a, b);
}

int ckptspec_compare_host_buffers(const void* actual, const void* expected,
                                  const ckptspec_shard_geometry* geometry,
                                  const ckptspec_compare_options* options,
                                  ckptspec_compare_report* report) {
  return Guarded([&] {
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(geometry, "geometry"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(options, "options"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(report, "report"));
    return ckptspec::device::CompareHostBuffers(actual, expected, *geometry, *options, report);
  });
}

int ckptspec_compare_host_generated(const void* actual, uint64_t seed, uint64_t key_hash,
                                    const ckptspec_shard_geometry* geometry,
                                    const ckptspec_compare_options* options,
                                    ckptspec_compare_report* report) {
  return Guarded([&] {
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(geometry, "geometry"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(options, "options"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(report, "report"));
    return ckptspec::device::CompareHostGenerated(actual, seed, key_hash, *geometry, *options,
                                                  report);
  });
}

int ckptspec_cuda_built(void) { return CKPTSPEC_DEVICE_HAVE_CUDA ? 1 : 0; }

int ckptspec_cuda_device_present(void) {
#if CKPTSPEC_DEVICE_HAVE_CUDA
  return ckptspec::device::CudaDevicePresent() ? 1 : 0;
#else
  return 0;
#endif
}

int ckptspec_compare_device_buffers(const void* actual, const void* expected,
                                    const ckptspec_shard_geometry* geometry,
                                    const ckptspec_compare_options* options,
                                    ckptspec_compare_report* report) {
  return Guarded([&] {
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(geometry, "geometry"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(options, "options"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(report, "report"));
#if CKPTSPEC_DEVICE_HAVE_CUDA
    return ckptspec::device::CompareDeviceBuffers(actual, expected, *geometry, *options, report);
#else
    (void)actual;
    (void)expected;
    return ckptspec::Status::FailedPrecondition(
        "libckptspec_device was built without CUDA; use ckptspec_compare_host_buffers");
#endif
  });
}

int ckptspec_compare_device_generated(const void* actual, uint64_t seed, uint64_t key_hash,
                                      const ckptspec_shard_geometry* geometry,
                                      const ckptspec_compare_options* options,
                                      ckptspec_compare_report* report) {
  return Guarded([&] {
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(geometry, "geometry"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(options, "options"));
    CKPTSPEC_RETURN_IF_ERROR(RequireNonNull(report, "report"));
#if CKPTSPEC_DEVICE_HAVE_CUDA
    return ckptspec::device::CompareDeviceGenerated(actual, seed, key_hash, *geometry, *options,
                                                    report);
#else
    (void)actual;
    (void)seed;
    (void)key_hash;
    return ckptspec::Status::FailedPrecondition(
        "libckptspec_device was built without CUDA; use ckptspec_compare_host_generated");
#endif
  });
}

const char* ckptspec_device_last_error(void) { return last_error.c_str(); }

}  // extern "C"
