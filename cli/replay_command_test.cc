#include "cli/replay_command.h"

#include <gtest/gtest.h>

#include <sstream>

#include "properties/runner.h"
#include "properties/target_registry.h"

namespace ckptspec {
namespace {

// A kill recorded by the runner replays to the same failure from its reproduce string alone.
TEST(ReplayCommand, ARecordedKillFailsAgain) {
  std::vector<TargetFactory> targets;
  ASSERT_TRUE(ResolveTargets("B19", &targets).ok());
  const PropertyOutcome recorded = RunProperty(*FindProperty("P13"), targets.front(), RunParams());
  ASSERT_EQ(recorded.verdict, Verdict::kFail) << DescribeOutcome(recorded);
  std::string target, property;
  ASSERT_TRUE(ParseReproduceKey(recorded.reproduce, &target, &property).ok());
  EXPECT_EQ(target, "B19");
  EXPECT_EQ(property, "P13");

  ReplayOptions o;
  o.reproduce = recorded.reproduce;
  std::ostringstream out, err;
  EXPECT_EQ(RunReplayCommand(o, out, err), 1) << out.str() << err.str();
  EXPECT_NE(out.str().find("B19 P13: FAIL (1 cases"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(recorded.message.substr(0, 40)), std::string::npos) << out.str();
}

TEST(ReplayCommand, BadStringsAreInvalidArguments) {
  ReplayOptions o;
  o.reproduce = "seed=1 reproduce=garbage";
  std::ostringstream out, err;
  EXPECT_EQ(RunReplayCommand(o, out, err), 2);
  EXPECT_NE(err.str().find("does not parse"), std::string::npos) << err.str();
  o.reproduce = "seed=1";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunReplayCommand(o, out2, err2), 2);
  EXPECT_NE(err2.str().find("holds 0 reproduce entries"), std::string::npos) << err2.str();
}

}  // namespace
}  // namespace ckptspec
