// No two items of a checkpoint share a byte: tensor chunks and objects occupy disjoint byte ranges
// of their files (two tensors cannot hold the same bytes; and a checkpoint whose items all point
// at one range would make every reader read that range again for each item).
#pragma once

#include <string>

#include "model/status.h"
#include "targets/reference/format.h"

namespace ckptspec {

// OK when the non-empty extents of m's chunks and objects are pairwise disjoint within each file.
// Otherwise Corruption naming the first overlap in file and offset order, both items and the
// shared bytes, after `where` (the index's path):
//   "<where>: tensor 'w' chunk [0:2, 0:4] and object 'rng/shard_0_1' share bytes [64, 96) of
//    shard_00001.bin"
// Cost: O(N log N) for N items, memory O(N).
Status CheckExtentsDisjoint(const CheckpointMetadata& m, const std::string& where);

}  // namespace ckptspec
