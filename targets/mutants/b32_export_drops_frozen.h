// B32 export-drops-frozen (DeepSpeed PR #3205, issue #3090): the consolidated export rebuilds the
// model from the parameters the optimizer holds state for, so a frozen parameter is left out.
// Mechanism and contract: see b32_export_drops_frozen.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B32Parts(int process);

}  // namespace ckptspec
