// B31 precision-switch-optim-reset (ParlAI PR #1772, cf. #1771): a resume under another params dtype
// starts the optimizer afresh.
// Mechanism and contract: see b31_precision_switch_optim_reset.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B31Parts(int process);

}  // namespace ckptspec
