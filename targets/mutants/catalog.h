// The mutant catalog: one entry per docs/BUGS.md bug (docs/DESIGN.md §7), each the reference target with one
// faithful deviation that reproduces the bug's mechanism (see each bNN_*.cc for the mechanism and
// the upstream thread; docs/MUTANTS.md for the table).
//
// Contracts:
//  - ids are "B01", "B02", ... in docs/BUGS.md order, one entry each (tools/check_generated_docs.py
//    checks docs/BUGS.md against them); a target built from an entry is named by its id.
//  - killers are the properties that kill the mutant, the most direct first: `ckptspec run
//    --target ID --seed 1` shows each of them K (properties/catalog_killers_test.cc proves it);
//    framework_killers the same for the properties' framework forms through the spec's framework
//    (`ckptspec run --adapter "ckptspec_reference_adapter --framework --mutant ID" --seed 1`;
//    properties/framework/framework_killers_test.cc proves it);
//    bench/time_to_detection_bench sweeps seeds over exactly these. This is the one list of
//    killers: the mutant sources do not repeat it, and docs/MUTANTS.md's and docs/PROPERTIES.md's
//    tables are printed from it by `ckptspec list --markdown`.
//  - parts(process) builds fresh, independent parts each call, for the target's process with
//    that ordinal (MakeParts, targets/reference/reference_target.h).
#pragma once

#include <string>
#include <vector>

#include "targets/mutants/mutant_target.h"
#include "targets/reference/reference_target.h"
#include "targets/target_factory.h"

namespace ckptspec {

struct MutantInfo {
  const char* id;         // "B04"
  const char* name;       // "cached-plan-drops-rerun"
  const char* upstream;   // the upstream thread
  const char* deviation;  // the deviation from the reference as implemented, one sentence
  const char* killers;    // killing properties, most direct first, e.g. "P6 P7 P19"
  ReplacedParts (*parts)(int process);
  // The properties whose framework forms (properties/framework/) kill the mutant served through
  // the spec's own framework (harness/spec_framework.h: a framework target over its parts),
  // most direct first; empty where its deviation is out of a framework job's reach (storage
  // faults, async staging, knobs a job does not set).
  const char* framework_killers = "";
};

const std::vector<MutantInfo>& MutantCatalog();
// The entry with this id ("B04") or name ("cached-plan-drops-rerun"), or null.
const MutantInfo* FindMutant(const std::string& id_or_name);
// The property ids in `info.killers`, in its order.
std::vector<std::string> KillerIds(const MutantInfo& info);
// The property ids in `info.framework_killers`, in its order.
std::vector<std::string> FrameworkKillerIds(const MutantInfo& info);
// The catalog entries that name `property_id` ("P6") among their killers, in catalog order.
std::vector<const MutantInfo*> MutantsKilledBy(const std::string& property_id);

// A TargetFactory (fresh MemEnv per target) named by the id.
TargetFactory MutantFactory(const MutantInfo& info);

}  // namespace ckptspec
