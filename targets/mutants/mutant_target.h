// What every mutant of the catalog (docs/BUGS.md, docs/DESIGN.md §7) is built from: the
// reference target (targets/reference/reference_target.h) with its own deviation in one or two
// replaced parts (ReplacedParts) -- its framework layer (a CanonicalFramework subclass; the
// catalog's are mostly edits of the canonical one, targets/mutants/framework_edits.h), its plan
// cache, its engine (a ReferenceEngine subclass) or its export; B04 replaces both the plan cache
// and the framework layer.
//
// Contracts:
//  - MutantTargetFactory makes the reference's factory with the mutant's parts
//    (targets/reference/reference_factory.h: independent targets on a fresh MemEnv each, fault
//    injection works, NewProcess builds fresh parts over the same storage), expected to be killed
//    (TargetFactory::expect_killed).
//  - EngineParts<E>() replaces only the engine, with an E made from the target's ReferenceOptions.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "targets/reference/reference_target.h"
#include "targets/target_factory.h"

namespace ckptspec {

TargetFactory MutantTargetFactory(const std::string& name, MakeParts parts);

template <typename E>
ReplacedParts EngineParts() {
  ReplacedParts parts;
  parts.engine = [](ReferenceOptions options) -> std::unique_ptr<ReferenceEngine> {
    return std::make_unique<E>(std::move(options));
  };
  return parts;
}

}  // namespace ckptspec
