// B19 async-error-swallowed (orbax #605 (PR #606); keras #23609): the async save's error is dropped.
// Mechanism and contract: see b19_async_error_swallowed.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B19Parts(int process);

}  // namespace ckptspec
