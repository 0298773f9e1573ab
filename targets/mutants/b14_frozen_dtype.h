// B14 frozen-dtype (DeepSpeed PR #8378): one category's fp32 master entries carry the model-dtype copy.
// Mechanism and contract: see b14_frozen_dtype.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B14Parts(int process);

}  // namespace ckptspec
