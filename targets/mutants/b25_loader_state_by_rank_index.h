// B25 loader-state-by-rank-index (NVIDIA-NeMo/Megatron-Bridge PR #5637): a resume under a smaller
// DP size restores each new DP rank's data loader from the saved file of the same rank index and
// silently drops the others. Mechanism and contract: see b25_loader_state_by_rank_index.cc and
// docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B25Parts(int process);

}  // namespace ckptspec
