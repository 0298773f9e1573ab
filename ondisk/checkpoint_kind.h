// Which format a checkpoint directory holds, recognised by its content, and where its index is.
//
//  - kReference: ckptspec's reference format (docs/FORMAT.md): a root with
//    latest_checkpointed_iteration.txt whose iteration directory has no DCP `.metadata`.
//  - kDcp: a PyTorch DCP directory: `.metadata` and `__R_I.distcp` files.
//  - kTorchDist: Megatron-core's torch_dist: a DCP directory whose metadata.json names
//    "sharded_backend": "torch_dist" (and common.pt beside it). A Megatron root (the tracker file
//    and iter_NNNNNNN/ directories) is recognised too: the tracker's iteration is checked.
#pragma once

#include <string>

#include "model/status.h"
#include "base/env.h"

namespace ckptspec {

enum class CheckpointKind { kReference, kDcp, kTorchDist };

// "reference", "pytorch-dcp", "megatron-torch_dist".
const char* CheckpointKindName(CheckpointKind kind);

struct DetectedCheckpoint {
  CheckpointKind kind = CheckpointKind::kReference;
  // The directory holding `.metadata` (DCP, torch_dist): `root` itself, or the tracker's iteration
  // directory of a Megatron root. Empty for the reference format.
  std::string index_dir;
};

// `env` reads the tree below `root` (a confined view). NotFound naming what was looked for when
// the directory is none of the formats.
Status DetectCheckpoint(Env* env, const std::string& root, DetectedCheckpoint* out);

}  // namespace ckptspec
