// A checkpoint in the reference format (docs/FORMAT.md) seen as CheckpointContents
// (ondisk/checkpoint_contents.h), for `ckptspec diff`: the latest iteration's tensors in global
// coordinates and its objects, read by the reference's own reader.
#pragma once

#include <memory>
#include <string>

#include "base/env.h"
#include "base/resource_limits.h"
#include "model/status.h"
#include "ondisk/checkpoint_contents.h"

namespace ckptspec {

// Opens the latest iteration of the reference checkpoint at `root`: its index only, checked as a
// load checks it, under `limits`. `env` must be a confined view of `root`, and outlive `*out`.
Status OpenReferenceContents(Env* env, const std::string& root, const ResourceLimits& limits,
                             std::unique_ptr<CheckpointContents>* out);

}  // namespace ckptspec
