// B33 stateful-replaced-after-load (pytorch PR #138575; torchtitan issue #571, PR #647): after the
// process's first load, a reload in the same process restores only what the framework's state
// dict holds as tensors; the iteration, scheduler, param groups, RNG, data position and rerun
// machine keep what training made of them. Mechanism and contract: see
// b33_stateful_replaced_after_load.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B33Parts(int process);

}  // namespace ckptspec
