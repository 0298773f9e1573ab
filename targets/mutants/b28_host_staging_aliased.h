// B28 host-staging-aliased (pytorch #144657): an async save stages device tensors by copying them to the host and hands host tensors over as they are; the write reads what training made of them after the save was scheduled.
// Mechanism and contract: see b28_host_staging_aliased.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B28Parts(int process);

}  // namespace ckptspec
