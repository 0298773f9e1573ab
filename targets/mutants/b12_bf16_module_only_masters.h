// B12 bf16-module-only-masters (DeepSpeed PR #4141): masters refreshed after a model-only load only for fp16, not bf16.
// Mechanism and contract: see b12_bf16_module_only_masters.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B12Parts(int process);

}  // namespace ckptspec
