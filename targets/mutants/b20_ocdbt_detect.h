// B20 ocdbt-detect (orbax #924): a format probe that misses a valid index layout. Mechanism
// and contract: see b20_ocdbt_detect.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B20Parts(int process);

}  // namespace ckptspec
