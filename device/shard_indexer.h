// Maps an element's local index in a shard's buffer to its global index in the tensor, for host
// and CUDA device (CKPTSPEC_HD). Built from a validated ckptspec_shard_geometry (compare_setup.h).
//
// Contract: GlobalIndexOf(i) is the row-major linear index, in the global shape, of the element
// whose local coordinates are the row-major unravelling of i in the local shape, plus the offset.
// Local order is global order restricted to the shard, so the map is strictly increasing.
#pragma once

#include <cstdint>

#include "device/ckptspec_device.h"
#include "model/host_device.h"

namespace ckptspec {
namespace device {

struct ShardIndexer {
  int32_t rank;
  // True when the shard's elements are consecutive in the global tensor, so that
  // GlobalIndexOf(i) == base + i and no division is needed.
  bool contiguous;
  int64_t count;  // elements in the shard
  uint64_t base;  // global index of the shard's first element (local index 0)
  int64_t local_shape[CKPTSPEC_DEVICE_MAX_RANK];
  int64_t global_stride[CKPTSPEC_DEVICE_MAX_RANK];
  // Length of the runs of consecutive global indices the shard is made of: the whole shard when
  // contiguous, else the innermost extent.
  int64_t run_length;

  CKPTSPEC_HD uint64_t GlobalIndexOf(int64_t local_index) const {
    if (contiguous) return base + static_cast<uint64_t>(local_index);
    uint64_t global = base;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t extent = local_shape[d];
      const int64_t coord = local_index % extent;
      local_index /= extent;
      global += static_cast<uint64_t>(coord) * static_cast<uint64_t>(global_stride[d]);
    }
    return global;
  }
};

}  // namespace device
}  // namespace ckptspec
