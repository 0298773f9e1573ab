// The property catalog: every invariant of docs/DESIGN.md §5 (P1-P19) and the stateful
// model-based test (P20, docs/PROPERTIES.md), written once against the harness (harness.h) and run against any target a TargetFactory (targets/target_factory.h)
// makes: the reference in ctest, mutants and adapters through the same table.
//
// Contract of a property's `check`: it is a RapidCheck property body. It generates one case
// (*gen... values), runs it on fresh targets from the factory, and RC_ASSERTs the invariant; on
// failure it has RC_LOG'ed a readable scenario (layout, config, operations) so RapidCheck's
// report of the shrunk case reads as a story. It never throws anything but RapidCheck's own
// results, and never leaves state behind.
#pragma once

#include <string>
#include <vector>

#include "harness/harness.h"
#include "targets/target_factory.h"

namespace ckptspec {

struct Property {
  const char* id;    // "P1"
  const char* name;  // "resume equivalence"
  // The invariant in one sentence, as docs/PROPERTIES.md's table prints it (`ckptspec list
  // --markdown`).
  const char* statement;
  const char* bugs;  // the docs/BUGS.md entries it is meant to catch, e.g. "B06 B10 B16"
  // Empty when the property applies to the factory's targets (their declared capabilities, and
  // whether their storage takes fault injection); else the reason it does not (reported as
  // "n/a", never as a pass).
  std::string (*not_applicable)(const TargetFactory& factory);
  void (*check)(const TargetFactory& factory);
  // The property's form for framework targets (TargetFactory::is_framework(), docs/PROTOCOL.md
  // "Framework adapters"; properties/framework/), or both null where it has none: it is then n/a
  // on framework targets, as the storage form is on them.
  std::string (*framework_not_applicable)(const TargetFactory& factory) = nullptr;
  void (*check_framework)(const TargetFactory& factory) = nullptr;
  // Its disk form (on a target with disk_faults and no fault_injection) draws from a recording
  // of processes whose calls interleave differently from run to run (properties/disk_forms.h):
  // a case run again may judge other states, so such a run is not shrunk and reports the first
  // failing case as it failed.
  bool drawn_from_a_recording = false;
};

// Why `property` does not apply to `factory` ("" when it does): its storage form's reason for a
// storage target; for a framework target its framework form's, or that it has none.
std::string NotApplicableReason(const Property& property, const TargetFactory& factory);
// The body that runs on `factory` (its framework form on a framework target). Precondition:
// NotApplicableReason is "".
void RunBody(const Property& property, const TargetFactory& factory);

// The catalog, in id order.
const std::vector<Property>& AllProperties();
// The property with this id ("P7"), or null.
const Property* FindProperty(const std::string& id);

// Property bodies (one file each).
void CheckResumeEquivalence(const TargetFactory& factory);         // P1
void CheckRoundTripIdentity(const TargetFactory& factory);         // P2
void CheckReshardingEquivalence(const TargetFactory& factory);     // P3
void CheckSaveShardingIntegrity(const TargetFactory& factory);     // P4
void CheckSaveKeyInjectivity(const TargetFactory& factory);        // P5
void CheckConstantStructure(const TargetFactory& factory);         // P6
std::string PlanCacheNotApplicable(const TargetFactory& factory);  // P7
void CheckPlanCacheSafety(const TargetFactory& factory);           // P7
void CheckParamGroupIdentity(const TargetFactory& factory);        // P8
void CheckCopyCoherence(const TargetFactory& factory);             // P9
void CheckSchedulerIteration(const TargetFactory& factory);        // P10
void CheckCommonStateInvariance(const TargetFactory& factory);     // P11
void CheckPerRankState(const TargetFactory& factory);              // P12
void CheckCrashConsistency(const TargetFactory& factory);          // P13
void CheckAsyncIsolation(const TargetFactory& factory);            // P14
void CheckStrictHandling(const TargetFactory& factory);            // P15
void CheckCorruption(const TargetFactory& factory);                // P16
void CheckDeterminism(const TargetFactory& factory);               // P17
void CheckBackwardCompatibility(const TargetFactory& factory);     // P18
void CheckRerunStateMachine(const TargetFactory& factory);         // P19
void CheckStatefulModel(const TargetFactory& factory);             // P20

}  // namespace ckptspec
