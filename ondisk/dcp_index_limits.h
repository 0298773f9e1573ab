// The resource limits (base/resource_limits.h) on a PyTorch DCP or torch_dist
// checkpoint, applied in one place for `ckptspec verify` and `ckptspec diff` before either reads
// any data:
//  - the index: .metadata beyond max_metadata_bytes is refused before it is read, its chunks and
//    storage entries together beyond max_chunks after (its geometry is checked as it is decoded:
//    formats/dcp_metadata.h);
//  - the reads: the bytes the storage entries declare (every chunk's and bytes item's entry)
//    against what the files they name occupy on disk (allocated blocks): a checkpoint whose
//    entries declare more than max_read_ratio times what it stores is refused, so overlapping
//    entries or a sparse file cannot make a read unbounded.
#pragma once

#include <cstdint>
#include <string>

#include "formats/dcp_checks.h"
#include "formats/dcp_metadata.h"
#include "model/status.h"
#include "base/env.h"
#include "base/resource_limits.h"

namespace ckptspec {

// Reads and decodes `dir`/.metadata under `limits` (the first item above). Errors name the file.
Status ReadDcpIndex(Env* env, const std::string& dir, const ResourceLimits& limits,
                    DcpMetadata* md);

struct DcpReadBudget {
  uint64_t to_read = 0;  // the entries' declared lengths, added (saturating)
  uint64_t stored = 0;   // the allocated bytes of the plain files they name, each file once
};

// Measures the entries `index` assigns to a chunk or a bytes item (IndexDcpStorage). Files that
// are missing, or not plain names, count as storing nothing.
DcpReadBudget MeasureDcpReads(Env* env, const std::string& dir, const DcpMetadata& md,
                              const DcpStorageIndex& index);

// NotSupported naming max_read_ratio and its flag when budget.to_read exceeds max_read_ratio times
// budget.stored (a checkpoint storing nothing counts as storing one byte):
//   "<dir>: 6442450944 bytes to read exceed max_read_ratio = 16 (--max-read-ratio raises it)
//    (the data files occupy 8192 bytes)".
Status CheckDcpReadRatio(const std::string& dir, const DcpReadBudget& budget,
                         const ResourceLimits& limits);

}  // namespace ckptspec
