// B18 gas-skip-count (transformers #5605 / PR #8624): the resume skip counts optimizer steps as micro-batches.
// Mechanism and contract: see b18_gas_skip_count.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B18Parts(int process);

}  // namespace ckptspec
