// B17 rng-state-all (transformers PR #23045): only the first rank's CUDA RNG is restored.
// Mechanism and contract: see b17_rng_state_all.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B17Parts(int process);

}  // namespace ckptspec
