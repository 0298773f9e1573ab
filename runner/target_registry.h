// The targets `ckptspec run` knows by name: the reference and the mutant catalog of
// targets/mutants/. Adapters are reached through the process harness instead.
#pragma once

#include <string>
#include <vector>

#include "targets/target_factory.h"

namespace ckptspec {

// Every registered target: the reference (its single-index and per-writer-index layouts) first,
// then the mutant catalog (targets/mutants/) in id
// order, each named by its id ("B04").
std::vector<TargetFactory> RegisteredTargets();

// Resolves one --target value: a registered name (a mutant also by its catalog name), a name in
// `extra` (targets a plugin registered, runner/plugin.h), "all" (every registered target and
// every extra one) or "all-mutants" (the mutant catalog). Unknown names are InvalidArgument
// listing the known ones.
Status ResolveTargets(const std::string& name, std::vector<TargetFactory>* out,
                      const std::vector<TargetFactory>& extra = {});

}  // namespace ckptspec
