/* The C ABI of the device checks: compare a reloaded tensor shard, held in GPU or host memory,
 * against expected state -- another buffer of the same shape, or the values of ckptspec's
 * content generator (model/content.h), computed where the comparison runs so nothing is copied.
 *
 * Built as libckptspec_device.so. Every function returns a ckptspec_status code; on error it
 * records a message naming what is wrong, readable with ckptspec_device_last_error() on the same
 * thread. Nothing aborts, nothing throws across this boundary. All structs are plain old data.
 *
 * Semantics (shared bit for bit by the CUDA kernels and the CPU twin):
 *
 *  Modes. BITWISE: an element matches iff its bit pattern equals the expected one. ULP: it matches
 *  iff both are finite and at most max_ulp units in the last place apart (distance between the
 *  ordered-integer images of the bit patterns; +0 and -0 are 0 apart), or both are the same
 *  infinity, or both are NaN and equal_nan is set. TOLERANCE (torch.testing.assert_close):
 *  matches iff |actual - expected| <= atol + rtol * |expected| (computed in double, the product
 *  rounded before the sum), or both are the same infinity, or both NaN and equal_nan is set.
 *  Integer dtypes: ULP distance is |actual - expected| as integers; TOLERANCE uses the same
 *  formula on the integer values (torch's defaults for integers are 0, i.e. exact).
 *
 *  Mismatch classes (each mismatching element is in exactly one):
 *   NAN          at least one side is NaN (exactly one; or both, with different bits in BITWISE
 *                mode, or in ULP/TOLERANCE mode without equal_nan);
 *   INF          neither is NaN and at least one is infinite (an infinity matches only itself);
 *   SIGNED_ZERO  both are zeros with different sign bits (only BITWISE mode tells them apart);
 *   VALUE        every other mismatch (both finite; any integer mismatch).
 *
 *  Errors. Over pairs where both values are finite: abs = |a - e|; rel = abs / |e| (0 when both are
 *  0, +inf when only e is 0); ulp = the ULP distance above. Each maximum is reported with the
 *  lowest local index attaining it; a maximum of 0 reports index -1. These are computed in every
 *  mode. Integers: abs and ulp are |a - e| (abs as a double), rel = abs / |e|.
 *
 *  Indices. Local index: row-major position in the shard's buffer. Global index: row-major position
 *  of the same element in the global tensor (shard offset + local coordinates). The first
 *  mismatch is the lowest local index (equivalently the lowest global index) that mismatches.
 *
 *  Checksums. actual_checksum = sum over elements (mod 2^64) of
 *  Mix64(bits ^ (global_index * 0x9E3779B97F4A7C15)), bits zero-extended to 64; likewise
 *  expected_checksum. Sums commute, so the result is independent of thread and block order, and
 *  the checksums of disjoint shards covering a tensor add up (ckptspec_checksum_combine) to the
 *  checksum of the whole tensor compared as one shard.
 */
#ifndef CKPTSPEC_DEVICE_CKPTSPEC_DEVICE_H_
#define CKPTSPEC_DEVICE_CKPTSPEC_DEVICE_H_

#include <stddef.h>
#include <stdint.h>

#if defined(CKPTSPEC_DEVICE_BUILDING_LIBRARY)
#define CKPTSPEC_DEVICE_API __attribute__((visibility("default")))
#else
#define CKPTSPEC_DEVICE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
typedef enum ckptspec_status {
  CKPTSPEC_OK = 0,
  CKPTSPEC_INVALID_ARGUMENT = 1, /* null pointer, bad dtype/mode/tolerance, bad geometry */
  CKPTSPEC_NO_CUDA = 2,          /* built without CUDA, or no CUDA device present */
  CKPTSPEC_CUDA_ERROR = 3,       /* a CUDA runtime call failed */
  CKPTSPEC_INTERNAL = 4          /* an unexpected failure (e.g. out of host memory) */
} ckptspec_status;

/* Element types: the values of ckptspec::DType (model/dtype.h). */
enum {
  CKPTSPEC_DTYPE_FP32 = 0,
  CKPTSPEC_DTYPE_BF16 = 1,
  CKPTSPEC_DTYPE_FP16 = 2,
  CKPTSPEC_DTYPE_FP8_E4M3 = 3, /* torch.float8_e4m3fn */
  CKPTSPEC_DTYPE_FP8_E5M2 = 4, /* torch.float8_e5m2 */
  CKPTSPEC_DTYPE_INT32 = 5,
  CKPTSPEC_DTYPE_INT64 = 6
};

/* Comparison modes. */
enum { CKPTSPEC_COMPARE_BITWISE = 0, CKPTSPEC_COMPARE_ULP = 1, CKPTSPEC_COMPARE_TOLERANCE = 2 };

#define CKPTSPEC_DEVICE_MAX_RANK 8

typedef struct ckptspec_compare_options {
  int32_t dtype;     /* CKPTSPEC_DTYPE_* */
  int32_t mode;      /* CKPTSPEC_COMPARE_* */
  uint64_t max_ulp;  /* ULP mode: the k of ULP-k */
  double rtol;       /* TOLERANCE mode; finite and >= 0 */
  double atol;       /* TOLERANCE mode; finite and >= 0 */
  int32_t equal_nan; /* ULP/TOLERANCE modes: nonzero lets NaN match NaN */
  int32_t threads;   /* CPU twin: worker threads, 1..256; 0 means the default, 2 */
} ckptspec_compare_options;

/* Where a shard sits: a box [offset, offset + local_shape) of a tensor of global_shape. The
 * buffer holds the box row-major and contiguous. rank 0 is a scalar (one element). */
typedef struct ckptspec_shard_geometry {
  int32_t rank;     /* 0..CKPTSPEC_DEVICE_MAX_RANK */
  int32_t reserved; /* must be 0 */
  int64_t global_shape[CKPTSPEC_DEVICE_MAX_RANK];
  int64_t offset[CKPTSPEC_DEVICE_MAX_RANK];
  int64_t local_shape[CKPTSPEC_DEVICE_MAX_RANK];
} ckptspec_shard_geometry;

typedef struct ckptspec_compare_report {
  uint64_t element_count;
  uint64_t mismatch_count; /* the sum of the four classes */
  uint64_t value_mismatches;
  uint64_t nan_mismatches;
  uint64_t inf_mismatches;
  uint64_t signed_zero_mismatches;
  int64_t first_mismatch_index;                           /* local; -1 when everything matches */
  int64_t first_mismatch_global_index;                    /* -1 when everything matches */
  int64_t first_mismatch_coord[CKPTSPEC_DEVICE_MAX_RANK]; /* global coordinates; unused axes 0 */
  int32_t rank;     /* the geometry's rank, for reading first_mismatch_coord */
  int32_t reserved; /* 0 */
  double max_abs_error;
  int64_t max_abs_error_index; /* local; -1 when max_abs_error is 0 */
  double max_rel_error;
  int64_t max_rel_error_index;
  uint64_t max_ulp_error;
  int64_t max_ulp_error_index;
  uint64_t actual_checksum;
  uint64_t expected_checksum;
} ckptspec_compare_report;

/* Fills *options with BITWISE mode for `dtype`, torch's default rtol/atol for it (for a later
 * switch to TOLERANCE mode), max_ulp 0, equal_nan 0, threads 0. */
CKPTSPEC_DEVICE_API int ckptspec_compare_options_init(int32_t dtype,
                                                      ckptspec_compare_options* options);

/* torch.testing.assert_close's defaults: fp32 1.3e-6/1e-5, fp16 1e-3/1e-5, bf16 1.6e-2/1e-5;
 * everything else (fp8 and integers, which torch's table omits) 0/0, i.e. exact. */
CKPTSPEC_DEVICE_API int ckptspec_default_tolerances(int32_t dtype, double* rtol, double* atol);

/* A rank-1 geometry covering `count` elements: global_shape = local_shape = {count}, offset 0. */
CKPTSPEC_DEVICE_API int ckptspec_geometry_flat(int64_t count, ckptspec_shard_geometry* geometry);

/* model/content.h's KeyHash of the key's bytes, for the generated-expected functions. */
CKPTSPEC_DEVICE_API int ckptspec_key_hash(const char* key, size_t key_length, uint64_t* hash);

/* Combines the checksums of disjoint shards: addition mod 2^64. */
CKPTSPEC_DEVICE_API uint64_t ckptspec_checksum_combine(uint64_t a, uint64_t b);

/* CPU twin. actual/expected point to host memory holding the shard (little-endian elements). A
 * null buffer is allowed only when the shard has no elements. */
CKPTSPEC_DEVICE_API int ckptspec_compare_host_buffers(const void* actual, const void* expected,
                                                      const ckptspec_shard_geometry* geometry,
                                                      const ckptspec_compare_options* options,
                                                      ckptspec_compare_report* report);
/* Expected values are ContentElementBits(dtype, seed, key_hash, global index). */
CKPTSPEC_DEVICE_API int ckptspec_compare_host_generated(const void* actual, uint64_t seed,
                                                        uint64_t key_hash,
                                                        const ckptspec_shard_geometry* geometry,
                                                        const ckptspec_compare_options* options,
                                                        ckptspec_compare_report* report);

/* 1 when this library was built with CUDA, else 0. */
CKPTSPEC_DEVICE_API int ckptspec_cuda_built(void);
/* 1 when built with CUDA and at least one CUDA device is usable, else 0. Never fails. */
CKPTSPEC_DEVICE_API int ckptspec_cuda_device_present(void);

/* CUDA versions: the buffers must be device (or managed) memory on the current device. They run
 * on the legacy default stream and return when the report is ready. Without CUDA (not built, or
 * no device) they return CKPTSPEC_NO_CUDA. options->threads is ignored. */
CKPTSPEC_DEVICE_API int ckptspec_compare_device_buffers(const void* actual, const void* expected,
                                                        const ckptspec_shard_geometry* geometry,
                                                        const ckptspec_compare_options* options,
                                                        ckptspec_compare_report* report);
CKPTSPEC_DEVICE_API int ckptspec_compare_device_generated(const void* actual, uint64_t seed,
                                                          uint64_t key_hash,
                                                          const ckptspec_shard_geometry* geometry,
                                                          const ckptspec_compare_options* options,
                                                          ckptspec_compare_report* report);

/* The message of the last failed call on this thread ("" if none). Valid until the next call. */
CKPTSPEC_DEVICE_API const char* ckptspec_device_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CKPTSPEC_DEVICE_CKPTSPEC_DEVICE_H_ */
