// Checks loaded tensor shards (load_to_device.h) with the device compare kernels, or with their
// CPU twin for host buffers: the same per-element logic and bit-identical reports either way
// (device/ckptspec_device.h states the report's contract).
//
// Contracts:
//  - CheckGenerated compares every tensor against the content generator: element i of a shard is
//    expected to be ContentElementBits(dtype, seed, KeyHash(key), global index), with the global
//    index from the spec's global shape and the shard's offset (spec.box()).
//  - CheckAgainst compares actual[i] with expected[i]; both lists must describe the same shards
//    (rank, key, dtype, global shape, box) in the same memory kind, else InvalidArgument.
//  - Buffers in host memory are checked by the CPU twin, buffers in CUDA memory by the kernels
//    (NotSupported "no CUDA device" where there is none). A shard of more than
//    CKPTSPEC_DEVICE_MAX_RANK axes is NotSupported. Errors name the rank and key.
//  - On success `checks` holds one TensorCheck per tensor, in the input's order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "device/ckptspec_device.h"
#include "model/sharded.h"
#include "model/status.h"
#include "targets/device_load/load_to_device.h"

namespace ckptspec {

struct CheckOptions {
  int32_t mode = CKPTSPEC_COMPARE_BITWISE;  // CKPTSPEC_COMPARE_*
  uint64_t max_ulp = 0;                     // ULP mode
  // TOLERANCE mode; negative: torch.testing's default for each tensor's dtype.
  double rtol = -1;
  double atol = -1;
  bool equal_nan = false;
  int32_t threads = 0;  // CPU twin workers; 0: the twin's default
};

struct TensorCheck {
  size_t rank = 0;
  std::string key;
  ckptspec_compare_report report{};
};

// The C ABI geometry of a shard: global shape, offset and local extents of spec.box().
Status ShardGeometryOf(const TensorSpec& spec, ckptspec_shard_geometry* geometry);

Status CheckGenerated(const std::vector<LoadedTensor>& tensors, uint64_t seed,
                      const CheckOptions& options, std::vector<TensorCheck>* checks);

Status CheckAgainst(const std::vector<LoadedTensor>& actual,
                    const std::vector<LoadedTensor>& expected, const CheckOptions& options,
                    std::vector<TensorCheck>* checks);

// True when every report has no mismatch.
bool AllMatch(const std::vector<TensorCheck>& checks);

// "rank R 'key': N mismatches (value V, nan N, inf I, signed zero Z), first at global index G" or
// "rank R 'key': ok".
std::string DescribeCheck(const TensorCheck& check);

}  // namespace ckptspec
