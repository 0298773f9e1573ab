// The targets `ckptspec run` knows by name: the reference, and (as they are added) the mutant
// catalog of targets/mutants/. Adapters are reached through the process harness instead.
#pragma once

#include <string>
#include <vector>

#include "properties/harness.h"

namespace ckptspec {

// Every registered target, the reference first.
std::vector<TargetFactory> RegisteredTargets();

// Resolves one --target value: a registered name, or "all" (every registered target). Unknown
// names are InvalidArgument listing the known ones.
Status ResolveTargets(const std::string& name, std::vector<TargetFactory>* out);

}  // namespace ckptspec
