// Loading by chunk intersection, in memory: fills the chunks a rank requests (a template) from
// the chunks a save wrote. This is the resharding rule of Megatron-core's load (docs/SEMANTICS.md §4):
// tensors match by key and global shape and are copied element by element where the boxes
// intersect, whatever the grids; objects match by unique key exactly and are never resharded (a rank-local object: the value
// of the same rank).
//
// Pure (no I/O): the reference checkpointer and the tests use it on chunks they hold.
#pragma once

#include <string>
#include <vector>

#include "model/sharded.h"
#include "model/status.h"

namespace ckptspec {

// Resizes target->data to the template's local volume and fills it from the saved chunks of
// target->spec.key. Every saved chunk must agree with the template on global shape
// (InvalidArgument naming the key and both values); a chunk of another dtype is converted into the
// template's (dtype_conversion.h: between floating dtypes, rounding to nearest even; an integer
// dtype or an overflow is InvalidArgument naming the key); chunks of other keys are ignored. Saved
// chunks whose data size does not match their local shape are Corruption. Every element of the
// template must be covered (NotFound naming the key and the first uncovered element); elements
// covered by several saved chunks take the last one (callers pass main replicas only).
Status FillTensorFromChunks(const std::vector<const ShardedTensor*>& saved, ShardedTensor* target);

// What a checkpoint holds: the main replicas (IsMainReplica) of every rank's tensors and
// objects (`saved` in global rank order), and the lowest rank's common state. Fills every entry of
// `request`, the template of global rank `rank`, from it and sets request->common: a sharded
// object by its unique key, a rank-local object from the one `rank` saved. Errors name the key
// that failed.
Status ResolveFromSaved(const std::vector<ShardedStateDict>& saved, int64_t rank,
                        ShardedStateDict* request);

}  // namespace ckptspec
