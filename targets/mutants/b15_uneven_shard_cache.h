// B15 uneven-shard-cache (torchtitan #1136 / PR #1702): uneven shards are loaded into a copy; the destination keeps its old content.
// Mechanism and contract: see b15_uneven_shard_cache.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B15Parts(int process);

}  // namespace ckptspec
