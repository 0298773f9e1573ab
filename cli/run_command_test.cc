#include "cli/run_command.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace ckptspec {
namespace {

TEST(RunCommand, BudgetIsCasesOrTime) {
  Budget b;
  ASSERT_TRUE(ParseBudget("200", &b).ok());
  EXPECT_EQ(b.cases, 200);
  ASSERT_TRUE(ParseBudget("30s", &b).ok());
  EXPECT_EQ(b.seconds, 30);
  ASSERT_TRUE(ParseBudget("2m", &b).ok());
  EXPECT_EQ(b.seconds, 120);
  EXPECT_EQ(ParseBudget("lots", &b).message(),
            "--budget 'lots' is neither a case count (e.g. 200) nor a time (e.g. 30s, 2m)");
  EXPECT_FALSE(ParseBudget("-5", &b).ok());
  EXPECT_FALSE(ParseBudget("1.5", &b).ok());
  EXPECT_FALSE(ParseBudget("", &b).ok());
}

TEST(RunCommand, ReferencePassesAndReportsAreWellFormed) {
  RunOptions o;
  o.targets = {"reference"};
  o.properties = "P2";
  o.budget = "10";
  o.quiet = true;
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("reference  pass"), std::string::npos) << out.str();

  PropertyOutcome fail;
  fail.target = "B04";
  fail.property = "P7";
  fail.verdict = Verdict::kFail;
  fail.cases = 3;
  fail.time_to_failure_s = 0.25;
  fail.shrunk_size = 40;
  fail.message = "a <bad> \"thing\"";
  fail.reproduce = "reproduce=abc";
  PropertyOutcome na;
  na.target = "B04";
  na.property = "P14";
  na.verdict = Verdict::kNotApplicable;
  na.message = "no async";
  const std::vector<PropertyOutcome> outcomes = {fail, na};
  EXPECT_NE(MatrixText(outcomes).find("KILLED 0.25s/3c/40b"), std::string::npos) << MatrixText(outcomes);
  EXPECT_NE(MatrixText(outcomes, {"B04"}).find("killed\n"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(OutcomesJson(outcomes, 9, {"B04"}));
  EXPECT_EQ(j["seed"], 9);
  EXPECT_EQ(j["targets"][0]["verdict"], "killed");
  EXPECT_EQ(j["targets"][0]["met"], true);
  EXPECT_EQ(j["outcomes"][0]["verdict"], "FAIL");
  EXPECT_EQ(j["outcomes"][0]["reproduce"], "reproduce=abc");
  EXPECT_EQ(j["outcomes"][1]["verdict"], "n/a");
  const std::string junit = OutcomesJUnit(outcomes);
  EXPECT_NE(junit.find("failures=\"1\" skipped=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("&lt;bad&gt; &quot;thing&quot;"), std::string::npos) << junit;
}

TEST(RunCommand, TargetsAreJudgedAgainstTheirExpectation) {
  PropertyOutcome pass, fail, na;
  pass.target = fail.target = na.target = "t";
  pass.verdict = Verdict::kPass;
  fail.verdict = Verdict::kFail;
  na.verdict = Verdict::kNotApplicable;
  EXPECT_EQ(JudgeTarget({pass, na}, "t", false).text, "clean");
  EXPECT_TRUE(JudgeTarget({pass, na}, "t", false).met);
  EXPECT_EQ(JudgeTarget({pass, fail}, "t", false).text, "FAILED");
  EXPECT_FALSE(JudgeTarget({pass, fail}, "t", false).met);
  EXPECT_EQ(JudgeTarget({pass, fail}, "t", true).text, "killed");
  EXPECT_TRUE(JudgeTarget({pass, fail}, "t", true).met);
  EXPECT_EQ(JudgeTarget({pass, na}, "t", true).text, "SURVIVED");
  EXPECT_FALSE(JudgeTarget({pass, na}, "t", true).met);
}

// A mutant killed by the selected properties meets its expectation (exit 0); one they miss
// survives (exit 1, named).
TEST(RunCommand, ExitCodeFollowsTheMutantsExpectation) {
  RunOptions o;
  o.quiet = true;
  o.targets = {"B19"};
  o.properties = "P13";
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("B19 fastest kill:"), std::string::npos) << out.str();
  o.properties = "P5";
  o.budget = "5";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunRunCommand(o, out2, err2), 1) << out2.str();
  EXPECT_NE(out2.str().find("B19: SURVIVED every selected property"), std::string::npos) << out2.str();
}

TEST(RunCommand, UnknownNamesAreInvalidArguments) {
  RunOptions o;
  o.targets = {"nonesuch"};
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 2);
  EXPECT_NE(err.str().find("unknown target 'nonesuch' (known: reference, reference-per-writer, B01, "), std::string::npos) << err.str();
  o.targets = {"reference"};
  o.properties = "P1,P99";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunRunCommand(o, out2, err2), 2);
  EXPECT_NE(err2.str().find("unknown property 'P99'"), std::string::npos);
}

}  // namespace
}  // namespace ckptspec
