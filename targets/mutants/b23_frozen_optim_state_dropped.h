// B23 frozen-optim-state-dropped (pytorch/pytorch issue #192202, PR #192307): a load drops the
// saved optimizer state of the parameters frozen now. Mechanism and contract: see
// b23_frozen_optim_state_dropped.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B23Parts(int process);

}  // namespace ckptspec
