// B03 hdo-cpu-copies-stale (Megatron-Bridge PR #3949; Megatron-LM PR #5071): after a load without optimizer state only the fp32 main copies are refreshed, not the CPU-offload copies.
// Mechanism and contract: see b03_hdo_cpu_copies_stale.cc and docs/MUTANTS.md.
#pragma once

#include "targets/mutants/mutant_target.h"

namespace ckptspec {

ReplacedParts B03Parts(int process);

}  // namespace ckptspec
