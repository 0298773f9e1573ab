// B06 rerun-inplace-resume (Megatron-LM PR #3981): persists RERUNNING_IN_PLACE, whose resume needs an unpersisted RNG snapshot.
// Mechanism and contract: see b06_rerun_inplace_resume.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B06Parts(int process);

}  // namespace ckptspec
