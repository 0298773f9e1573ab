// B24 lazy-state-requested (torchtitan PR #4474; prime-rl PR #2800): a load requests optimizer
// state for every trainable parameter, also those the checkpoint holds none for. Mechanism and
// contract: see b24_lazy_state_requested.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B24Parts(int process);

}  // namespace ckptspec
