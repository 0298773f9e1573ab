// The framework forms of the properties against the spec's own framework in process
// (harness/spec_framework.h) over the reference: every one must hold, so the load rules over
// observations (model/observation_rules.h) agree with the spec's own load rules, and the
// observations the spec's framework makes are what the rules read.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "properties/framework/framework_properties.h"
#include "properties/property.h"
#include "harness/spec_framework.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

const TargetFactory& SpecFrameworkOverReference() {
  static const TargetFactory factory = SpecFrameworkFactory(ReferenceTargetFactory());
  return factory;
}

RC_GTEST_PROP(SpecFramework, P1_ResumeEquivalence, ()) {
  CheckFrameworkResumeEquivalence(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P2_RoundTrip, ()) {
  CheckFrameworkRoundTrip(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P3_Resharding, ()) {
  CheckFrameworkResharding(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P4_ShardingIntegrity, ()) {
  CheckFrameworkShardingIntegrity(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P5_KeyInjectivity, ()) {
  CheckFrameworkKeyInjectivity(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P6_ConstantStructure, ()) {
  CheckFrameworkConstantStructure(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P7_PlanCacheSafety, ()) {
  CheckFrameworkPlanCacheSafety(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P8_ParamGroups, ()) {
  CheckFrameworkParamGroups(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P9_CopyCoherence, ()) {
  CheckFrameworkCopyCoherence(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P10_Scheduler, ()) {
  CheckFrameworkScheduler(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P11_CommonState, ()) {
  CheckFrameworkCommonState(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P12_PerRankState, ()) {
  CheckFrameworkPerRankState(SpecFrameworkOverReference());
}
RC_GTEST_PROP(SpecFramework, P19_Rerun, ()) { CheckFrameworkRerun(SpecFrameworkOverReference()); }

// The spec's framework declares everything: every framework form applies to it.
TEST(SpecFramework, EveryFrameworkFormApplies) {
  for (const Property& p : AllProperties()) {
    if (p.check_framework == nullptr) continue;
    EXPECT_EQ(NotApplicableReason(p, SpecFrameworkOverReference()), "") << p.id;
  }
}

}  // namespace
}  // namespace ckptspec
