// B22 torchft-stale-lr (torchtitan PR #4598, PR #4422): the framework serves a cached optimizer
// state dict whose learning rates stay those of its first use, and a load keeps the loaded groups'
// learning rates. Mechanism and contract: see b22_torchft_stale_lr.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B22Parts(int process);

}  // namespace ckptspec
