// B13 z0-bf16-optim-lost (DeepSpeed PR #7786): bf16 runs lose the loaded optimizer moments and steps.
// Mechanism and contract: see b13_z0_bf16_optim_lost.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B13Parts(int process);

}  // namespace ckptspec
