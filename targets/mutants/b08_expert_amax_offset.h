// B08 expert-amax-offset (NVIDIA/Model-Optimizer #2209): a per-expert scalar entry (the step counter) loses its expert axis.
// Mechanism and contract: see b08_expert_amax_offset.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B08Parts(int process);

}  // namespace ckptspec
