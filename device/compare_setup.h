// Host-side validation of the C ABI's inputs, and the translation between its POD structs and
// the internal comparison state. Shared by the CPU twin and the CUDA path.
//
// Contracts:
//  - ValidateOptions/MakeIndexer never crash on any input; they return InvalidArgument with a
//    message naming the field and the bad value.
//  - A geometry is valid when 0 <= rank <= CKPTSPEC_DEVICE_MAX_RANK, reserved == 0, every global
//    extent and local extent is >= 0, every offset >= 0, offset + local extent <= global extent on
//    each axis, and the global volume fits in int64.
//  - FinishReport turns a merged accumulator into the report, computing the first mismatch's global
//    coordinates from its local index.
#pragma once

#include "device/ckptspec_device.h"
#include "device/compare_accumulator.h"
#include "device/element_compare.h"
#include "device/shard_indexer.h"
#include "model/dtype.h"
#include "model/status.h"

namespace ckptspec {
namespace device {

// torch.testing.assert_close's default (rtol, atol) for `dtype`; see ckptspec_default_tolerances.
void DefaultTolerances(DType dtype, double* rtol, double* atol);

// Checks the dtype field alone.
Status ValidateDType(int32_t dtype, DType* out);

Status ValidateOptions(const ckptspec_compare_options& options, DType* dtype,
                       CompareParams* params);

Status MakeIndexer(const ckptspec_shard_geometry& geometry, ShardIndexer* indexer);

// Threads for the CPU twin: options.threads, or 2 when it is 0.
int ThreadsFor(const ckptspec_compare_options& options);

ckptspec_compare_report FinishReport(const CompareAccumulator& acc,
                                     const ckptspec_shard_geometry& geometry,
                                     const ShardIndexer& indexer);

}  // namespace device
}  // namespace ckptspec
