// The property catalog instantiated for the reference target: every property must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "properties/property.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

const TargetFactory& Reference() {
  static const TargetFactory factory = ReferenceTargetFactory();
  return factory;
}

RC_GTEST_PROP(ReferenceTarget, P1_ResumeEquivalence, ()) { CheckResumeEquivalence(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P2_RoundTripIdentity, ()) { CheckRoundTripIdentity(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P3_ReshardingEquivalence, ()) {
  CheckReshardingEquivalence(Reference());
}
RC_GTEST_PROP(ReferenceTarget, P4_ShardingIntegrity, ()) {
  CheckSaveShardingIntegrity(Reference());
}
RC_GTEST_PROP(ReferenceTarget, P5_KeyInjectivity, ()) { CheckSaveKeyInjectivity(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P6_ConstantStructure, ()) { CheckConstantStructure(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P7_PlanCacheSafety, ()) { CheckPlanCacheSafety(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P8_ParamGroupIdentity, ()) { CheckParamGroupIdentity(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P9_CopyCoherence, ()) { CheckCopyCoherence(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P10_SchedulerIteration, ()) { CheckSchedulerIteration(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P11_CommonStateInvariance, ()) {
  CheckCommonStateInvariance(Reference());
}
RC_GTEST_PROP(ReferenceTarget, P12_PerRankState, ()) { CheckPerRankState(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P13_CrashConsistency, ()) { CheckCrashConsistency(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P14_AsyncIsolation, ()) { CheckAsyncIsolation(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P15_StrictHandling, ()) { CheckStrictHandling(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P16_Corruption, ()) { CheckCorruption(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P17_Determinism, ()) { CheckDeterminism(Reference()); }
RC_GTEST_PROP(ReferenceTarget, P18_BackwardCompatibility, ()) {
  CheckBackwardCompatibility(Reference());
}
RC_GTEST_PROP(ReferenceTarget, P19_RerunStateMachine, ()) { CheckRerunStateMachine(Reference()); }

// The reference declares every capability, so no property may be "not applicable" to it.
TEST(ReferenceTarget, EveryPropertyApplies) {
  for (const Property& p : AllProperties()) {
    EXPECT_EQ(p.not_applicable(Reference()), "") << p.id;
  }
}

}  // namespace
}  // namespace ckptspec
