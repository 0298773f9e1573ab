// The catalog's killers (targets/mutants/catalog.h, MutantInfo::killers) are what they claim: each
// property named there kills its mutant with seed 1 and the default budget, as `ckptspec run
// --target ID --seed 1` would show. The killers list is the one place that fact is kept; this
// test is what keeps it true.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "properties/property.h"
#include "runner/runner.h"
#include "targets/mutants/catalog.h"

namespace ckptspec {
namespace {

class CatalogKillers : public ::testing::TestWithParam<const MutantInfo*> {};

TEST_P(CatalogKillers, EveryKillerKillsTheMutantWithSeedOne) {
  const MutantInfo& mutant = *GetParam();
  const std::vector<std::string> killers = KillerIds(mutant);
  ASSERT_FALSE(killers.empty()) << mutant.id << " names no killer";
  const TargetFactory factory = MutantFactory(mutant);
  for (const std::string& id : killers) {
    const Property* property = FindProperty(id);
    ASSERT_NE(property, nullptr) << mutant.id << " names an unknown property " << id;
    RunParams params;  // seed 1, the default budget
    params.shrink = false;
    const PropertyOutcome outcome = RunProperty(*property, factory, params);
    EXPECT_EQ(outcome.verdict, Verdict::kFail)
        << mutant.id << " (" << mutant.name << "): its killer " << id << " gave "
        << VerdictName(outcome.verdict) << " after " << outcome.cases << " cases";
  }
}

std::vector<const MutantInfo*> AllMutants() {
  std::vector<const MutantInfo*> all;
  for (const MutantInfo& m : MutantCatalog()) all.push_back(&m);
  return all;
}

INSTANTIATE_TEST_SUITE_P(Catalog, CatalogKillers, ::testing::ValuesIn(AllMutants()),
                         [](const ::testing::TestParamInfo<const MutantInfo*>& info) {
                           return std::string(info.param->id);
                         });

}  // namespace
}  // namespace ckptspec
