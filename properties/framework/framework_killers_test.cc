// The catalog's framework killers (targets/mutants/catalog.h, MutantInfo::framework_killers) are
// what they claim: each property named there kills its mutant through the spec's own framework
// (harness/spec_framework.h) with seed 1 and the default budget. The mutants' deviations are
// in the framework layer or the engine a framework job saves through, so the framework forms of
// the properties must find them as they find a real framework's bugs. (The reference passes every
// framework form: spec_framework_properties_test.cc.)
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "properties/property.h"
#include "runner/runner.h"
#include "harness/spec_framework.h"
#include "targets/mutants/catalog.h"

namespace ckptspec {
namespace {

class FrameworkKillers : public ::testing::TestWithParam<const MutantInfo*> {};

TEST_P(FrameworkKillers, EveryFrameworkKillerKillsTheMutantWithSeedOne) {
  const MutantInfo& mutant = *GetParam();
  const TargetFactory factory = SpecFrameworkFactory(MutantFactory(mutant));
  for (const std::string& id : FrameworkKillerIds(mutant)) {
    const Property* property = FindProperty(id);
    ASSERT_NE(property, nullptr) << mutant.id << " names an unknown property " << id;
    ASSERT_NE(property->check_framework, nullptr) << id << " has no framework form";
    RunParams params;  // seed 1, the default budget
    params.shrink = false;
    const PropertyOutcome outcome = RunProperty(*property, factory, params);
    EXPECT_EQ(outcome.verdict, Verdict::kFail)
        << mutant.id << " (" << mutant.name << "): its framework killer " << id << " gave "
        << VerdictName(outcome.verdict) << " after " << outcome.cases << " cases";
  }
}

std::vector<const MutantInfo*> MutantsWithFrameworkKillers() {
  std::vector<const MutantInfo*> out;
  for (const MutantInfo& m : MutantCatalog()) {
    if (!FrameworkKillerIds(m).empty()) out.push_back(&m);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Catalog, FrameworkKillers,
                         ::testing::ValuesIn(MutantsWithFrameworkKillers()),
                         [](const ::testing::TestParamInfo<const MutantInfo*>& info) {
                           return std::string(info.param->id);
                         });

}  // namespace
}  // namespace ckptspec
