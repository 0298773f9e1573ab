// B09 nvrx-stale-ipc-cache (NeMo-RL #3312; nvidia-resiliency-ext PR #314): async staging cache keyed on structure only: later saves write the first save's data.
// Mechanism and contract: see b09_nvrx_stale_ipc_cache.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B09Parts(int process);

}  // namespace ckptspec
