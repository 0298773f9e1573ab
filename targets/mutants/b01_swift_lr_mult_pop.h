// B01 swift-lr-mult-pop (ms-swift PR #9517): strips lr_mult from the saved param groups: identity is checked only on load.
// Mechanism and contract: see b01_swift_lr_mult_pop.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B01Parts(int process);

}  // namespace ckptspec
