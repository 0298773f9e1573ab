// B02 mimo-optimizer (Megatron-LM PRs #4801 #4791 #4790): a module-common optimizer object whose replica id ignores tp_rank.
// Mechanism and contract: see b02_mimo_optimizer.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B02Parts(int process);

}  // namespace ckptspec
