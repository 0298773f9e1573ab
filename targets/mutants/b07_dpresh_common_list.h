// B07 dpresh-common-list (radixark/Megatron-LM PR #66): the per-rank dp_reshardable slice list goes into common state.
// Mechanism and contract: see b07_dpresh_common_list.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B07Parts(int process);

}  // namespace ckptspec
