// B16 skip-batches-epoch-reset (accelerate PR #4071): the resumed data iterator resets the sampler epoch to 0.
// Mechanism and contract: see b16_skip_batches_epoch_reset.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B16Parts(int process);

}  // namespace ckptspec
