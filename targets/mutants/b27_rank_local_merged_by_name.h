// B27 rank-local-merged-by-name (pytorch #120356): rank-local values saved under one key are deduplicated by name; every rank reads back one rank's value.
// Mechanism and contract: see b27_rank_local_merged_by_name.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B27Parts(int process);

}  // namespace ckptspec
