// B11 rng-reseeded-after-load (ms-swift PR #9935): every rank's RNG is reseeded after the load restored it.
// Mechanism and contract: see b11_rng_reseeded_after_load.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B11Parts(int process);

}  // namespace ckptspec
