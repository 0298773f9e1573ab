// B30 async-retention-at-schedule (Megatron-Bridge PR #4678; the same class: PR #5184): retention for an async save runs when the save is scheduled, counting it as a checkpoint already, and removes the older checkpoint the tracker still names.
// Mechanism and contract: see b30_async_retention_at_schedule.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B30Parts(int process);

}  // namespace ckptspec
