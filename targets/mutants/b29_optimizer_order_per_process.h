// B29 optimizer-order-per-process (alf #889, PR #891): optimizer state is stored by each parameter's position in an order that holds only within one process.
// Mechanism and contract: see b29_optimizer_order_per_process.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B29Parts(int process);

}  // namespace ckptspec
