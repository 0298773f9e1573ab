// What every mutant of the catalog (docs/BUGS.md, docs/DESIGN.md §7) is built from: the
// reference target (targets/reference/reference_target.h) with its own deviation in one or two
// replaced parts (ReplacedParts) -- its framework layer (a CanonicalFramework subclass that
// overrides a method), its plan cache, or its engine (a ReferenceEngine subclass); B04 replaces
// both the plan cache and the framework layer.
//
// Contracts:
//  - MutantTargetFactory makes the reference's factory with the mutant's parts
//    (targets/reference/reference_factory.h: independent targets on a fresh MemEnv each, fault
//    injection works, NewProcess builds fresh parts over the same storage), expected to be killed
//    (TargetFactory::expect_killed).
#pragma once

#include <string>

#include "targets/reference/reference_target.h"
#include "targets/target_factory.h"

namespace ckptspec {

TargetFactory MutantTargetFactory(const std::string& name, MakeParts parts);

}  // namespace ckptspec
