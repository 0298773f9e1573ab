// B05 override-sched-ignored (Megatron-LM #1138, PR #1284): under --override-opt_param-scheduler the groups keep the checkpoint's LR bounds.
// Mechanism and contract: see b05_override_sched_ignored.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B05Parts(int process);

}  // namespace ckptspec
