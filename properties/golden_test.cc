#include "properties/golden.h"

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

// Every committed golden reads back, and its scenario.json tells the param-group key form its
// checkpoint really holds: "lr_bounds_declared" is in the checkpoint's files exactly when
// scenario.json says the groups are keyed with declared LR bounds. Both forms are committed.
TEST(Golden, EveryGoldenReadsAndNamesTheParamGroupFormItHolds) {
  int older = 0, newer = 0;
  for (const GoldenScenario& scenario : GoldenScenarios()) {
    GoldenCheckpoint golden;
    ASSERT_TRUE(ReadGoldenScenario(scenario, Env::Posix(),
                                   JoinPath(GoldenCorpusDir(), scenario.name), &golden)
                    .ok())
        << scenario.name;
    bool records_bounds = false;
    for (const auto& [path, content] : golden.tree) {
      records_bounds |= content.find("\"lr_bounds_declared\"") != std::string::npos;
    }
    const bool says_newer = golden.param_group_key == IdentityKeySet::kWithLrBounds;
    EXPECT_EQ(records_bounds, says_newer) << scenario.name;
    (says_newer ? newer : older) += 1;
  }
  EXPECT_GT(older, 0) << "no golden of the older param-group form";
  EXPECT_GT(newer, 0) << "no golden whose param groups record their declared LR bounds";
}

}  // namespace
}  // namespace ckptspec
