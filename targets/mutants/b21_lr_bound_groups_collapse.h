// B21 lr-bound-groups-collapse (Megatron-LM PR #4705): param groups that differ only in their LR
// bounds collapse at load into the last saved one. Mechanism and contract: see
// b21_lr_bound_groups_collapse.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B21Parts(int process);

}  // namespace ckptspec
