// B04 cached-plan-drops-rerun (Megatron-LM PR #4448 (issue #4378)): pre-v0.18 rerun emission plus a plan cache that reuses the cached plan when the key set changes.
// Mechanism and contract: see b04_cached_plan_drops_rerun.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B04Parts(int process);
// The trigger half alone (Megatron before v0.18 without the stale cache), for tests.
std::unique_ptr<FrameworkLayer> PreV018RerunFrameworkForTest();

}  // namespace ckptspec
