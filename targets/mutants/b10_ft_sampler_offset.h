// B10 ft-sampler-offset (Megatron-Bridge PR #4601): the resumed sampler re-applies its resume offset
// at every epoch pass. Mechanism and contract: see b10_ft_sampler_offset.cc and
// docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B10Parts(int process);

}  // namespace ckptspec
