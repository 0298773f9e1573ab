// The framework forms of the catalog's properties (docs/PROTOCOL.md, "Framework adapters"): each
// runs one case against a framework target (TargetFactory::is_framework()) beside the spec's twin
// (framework_pair.h) and judges the target's observations with the load rules over observations
// (model/observation_rules.h). Same contract as property.h's check: a RapidCheck property body
// that logs a readable scenario and the operations before it fails.
#pragma once

#include "targets/target_factory.h"

namespace ckptspec {

void CheckFrameworkResumeEquivalence(const TargetFactory& factory);  // P1
void CheckFrameworkRoundTrip(const TargetFactory& factory);          // P2
void CheckFrameworkResharding(const TargetFactory& factory);         // P3
void CheckFrameworkShardingIntegrity(const TargetFactory& factory);  // P4
void CheckFrameworkKeyInjectivity(const TargetFactory& factory);     // P5
void CheckFrameworkConstantStructure(const TargetFactory& factory);  // P6
void CheckFrameworkPlanCacheSafety(const TargetFactory& factory);    // P7
void CheckFrameworkParamGroups(const TargetFactory& factory);        // P8
void CheckFrameworkCopyCoherence(const TargetFactory& factory);      // P9
void CheckFrameworkScheduler(const TargetFactory& factory);          // P10
void CheckFrameworkCommonState(const TargetFactory& factory);        // P11
void CheckFrameworkPerRankState(const TargetFactory& factory);       // P12
void CheckFrameworkRerun(const TargetFactory& factory);              // P19

}  // namespace ckptspec
