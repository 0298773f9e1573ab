// B26 per-rank-skip-rescaled (of this catalog's own design; cf. huggingface/transformers issue
// #22580): a resume under another DP size positions the global sampler by the per-rank count of
// the saving run times the new DP size. Mechanism and contract: see b26_per_rank_skip_rescaled.cc
// and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B26Parts(int process);

}  // namespace ckptspec
