// The CUDA device checks: compare a shard held in GPU memory against another GPU buffer, or
// against the content generator's values computed inside the kernel (nothing is copied).
// Compiled only when CUDA is built (CKPTSPEC_DEVICE_HAVE_CUDA).
//
// Contracts:
//  - Reports are bit-identical to the CPU twin's (compare_host.h) for the same inputs.
//  - Each thread accumulates a CompareAccumulator over a grid-stride range; each block reduces its
//    threads' accumulators with CUB's BlockReduce and writes ONE partial result; the host merges
//    the per-block partials (at most a few thousand) exactly. No atomics, so the result does not
//    depend on scheduling and heavy mismatch does not serialize.
//  - Buffers must be device or managed memory; anything else is InvalidArgument. No device gives
//    FailedPrecondition ("no CUDA device"); a failing CUDA call gives IOError with CUDA's message.
//  - Runs on the legacy default stream and returns when the report is complete.
#pragma once

#include <cstdint>

#include "device/ckptspec_device.h"
#include "model/status.h"

namespace ckptspec {
namespace device {

// True when at least one CUDA device is usable. Never fails; clears any CUDA error it causes.
bool CudaDevicePresent();

Status CompareDeviceBuffers(const void* actual, const void* expected,
                            const ckptspec_shard_geometry& geometry,
                            const ckptspec_compare_options& options,
                            ckptspec_compare_report* report);

Status CompareDeviceGenerated(const void* actual, uint64_t seed, uint64_t key_hash,
                              const ckptspec_shard_geometry& geometry,
                              const ckptspec_compare_options& options,
                              ckptspec_compare_report* report);

}  // namespace device
}  // namespace ckptspec
