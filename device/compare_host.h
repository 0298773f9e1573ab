// The CPU twin of the CUDA device checks: compares a shard held in host memory against another
// host buffer, or against the content generator's values, with std::thread workers.
//
// Contract: for the same inputs the report is bit-identical to the CUDA path's (compare_cuda.h)
// and independent of the number of threads -- the per-element logic is the shared
// element_compare.h and partial results merge exactly (compare_accumulator.h). Invalid input gives
// InvalidArgument naming the field; a null buffer is accepted only for a shard with no elements.
#pragma once

#include <cstdint>

#include "device/ckptspec_device.h"
#include "model/status.h"

namespace ckptspec {
namespace device {

Status CompareHostBuffers(const void* actual, const void* expected,
                          const ckptspec_shard_geometry& geometry,
                          const ckptspec_compare_options& options, ckptspec_compare_report* report);

Status CompareHostGenerated(const void* actual, uint64_t seed, uint64_t key_hash,
                            const ckptspec_shard_geometry& geometry,
                            const ckptspec_compare_options& options,
                            ckptspec_compare_report* report);

}  // namespace device
}  // namespace ckptspec
