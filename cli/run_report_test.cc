// The reports of `ckptspec run` (run_report.h) on outcomes made by hand.
#include "cli/run_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ckptspec {
namespace {

TEST(RunReport, ReportsAreWellFormed) {
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
  EXPECT_NE(MatrixText(outcomes).find("target  verdict  P7  P14\nB04     FAILED   F   -\n"),
            std::string::npos)
      << MatrixText(outcomes);
  EXPECT_EQ(KillTimesText(outcomes),
            "\nfailures, time to the first failing case / cases run / size of the shrunk "
            "counterexample:\nB04:  P7 0.25s/3c/40b\n");
  RunJudging mutant;
  mutant.expect_killed = {"B04"};
  EXPECT_EQ(MatrixText(outcomes, mutant).substr(0, 50),
            "target  verdict  P7  P14\nB04     killed   K   -\nK ");
  const nlohmann::json j = nlohmann::json::parse(OutcomesJson(outcomes, 9, mutant));
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

// Under an expectations file: an expected failure is a line below the matrix and a skipped JUnit
// case, an unexpected pass is named below the matrix and a JUnit failure; a surviving mutant is
// named below the matrix and fails its "killed" case.
TEST(RunReport, ReportsFollowTheJudgement) {
  Expectations file;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P7": {"expect": "fail", "reason": "known"},
                     "P2": {"expect": "fail", "reason": "a bug"}}})",
                                "expectations.json", &file)
                  .ok());
  PropertyOutcome xfail, unexpected, survived;
  xfail.target = unexpected.target = "t";
  xfail.property = "P7";
  xfail.verdict = Verdict::kFail;
  xfail.message = "boom";
  unexpected.property = "P2";
  unexpected.verdict = Verdict::kPass;
  survived.target = "m";
  survived.property = "P2";
  survived.verdict = Verdict::kPass;
  const std::vector<PropertyOutcome> outcomes = {xfail, unexpected, survived};
  RunJudging judging;
  judging.expectations = &file;
  judging.expect_killed = {"m"};
  const std::string matrix = MatrixText(outcomes, judging);
  EXPECT_NE(matrix.find("t       UNEXPECTED  x  P\nm       SURVIVED       .\n"), std::string::npos)
      << matrix;
  EXPECT_NE(matrix.find("UNEXPECTED against expectations.json\n"), std::string::npos) << matrix;
  const std::string below = OutcomeDescriptions(outcomes, judging, false);
  EXPECT_NE(below.find("\nxfail t P7 (known): FAIL: boom\n"), std::string::npos) << below;
  EXPECT_NE(below.find("\nUNEXPECTED pass: t P2, expected fail (a bug)\n"), std::string::npos)
      << below;
  EXPECT_NE(below.find("\nm: SURVIVED every selected property (no case failed)\n"),
            std::string::npos)
      << below;
  const nlohmann::json j = nlohmann::json::parse(OutcomesJson(outcomes, 1, judging));
  EXPECT_EQ(j["targets"][0]["expect"], "as expected");
  EXPECT_EQ(j["targets"][0]["met"], false);
  EXPECT_EQ(j["targets"][1]["expect"], "killed");
  EXPECT_EQ(j["outcomes"][0]["expected"], "fail");
  EXPECT_EQ(j["outcomes"][0]["expected_reason"], "known");
  EXPECT_EQ(j["outcomes"][0]["matches"], true);
  EXPECT_EQ(j["outcomes"][1]["matches"], false);
  EXPECT_FALSE(j["outcomes"][2].contains("matches"));
  const std::string junit = OutcomesJUnit(outcomes, judging);
  EXPECT_NE(junit.find("tests=\"4\" failures=\"2\" skipped=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<skipped message=\"expected failure: known\"/>"), std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<failure message=\"UNEXPECTED pass\">"), std::string::npos) << junit;
  EXPECT_NE(junit.find("classname=\"m\" name=\"killed\"><failure message=\"SURVIVED\">"),
            std::string::npos)
      << junit;
}

// Shares are over the passing outcomes of a property, all targets together; a class no case
// carried is at 0 % and under the goal, and a property without a passing outcome says so.
// An expected failure for another reason than its match is described as such, with the match.
TEST(RunReport, AFailureForAnotherReasonIsUnexpected) {
  Expectations file;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P7": {"expect": "fail", "match": "boom", "reason": "known"}}})",
                                "expectations.json", &file)
                  .ok());
  PropertyOutcome hang;
  hang.target = "t";
  hang.property = "P7";
  hang.verdict = Verdict::kFail;
  hang.message = "no reply within 300 s";
  RunJudging judging;
  judging.expectations = &file;
  const std::string below = OutcomeDescriptions({hang}, judging, false);
  EXPECT_NE(below.find("\nUNEXPECTED FAIL for another reason: t P7, expected fail naming 'boom' "
                       "(known)\n"),
            std::string::npos)
      << below;
  EXPECT_NE(MatrixText({hang}, judging).find("t       UNEXPECTED  F"), std::string::npos)
      << MatrixText({hang}, judging);
  const nlohmann::json j = nlohmann::json::parse(OutcomesJson({hang}, 1, judging));
  EXPECT_EQ(j["outcomes"][0]["expected_match"], "boom");
  EXPECT_EQ(j["outcomes"][0]["matches"], false);
}

TEST(RunReport, CoverageGivesEachClassItsShareOfPassingCases) {
  PropertyOutcome a;
  a.target = "reference";
  a.property = "P1";
  a.verdict = Verdict::kPass;
  a.cases = 100;
  a.tag_counts = {{"async save", 3}, {"heterogeneous", 40}, {"sync save", 97}};
  PropertyOutcome b = a;
  b.target = "B04";
  b.tag_counts = {{"async save", 5}, {"heterogeneous", 40}};
  PropertyOutcome failed = a;
  failed.target = "B06";
  failed.verdict = Verdict::kFail;
  failed.tag_counts = {{"async save", 100}};  // not counted: not a pass
  PropertyOutcome n_a = a;
  n_a.property = "P2";
  n_a.verdict = Verdict::kNotApplicable;
  const std::string text = CoverageText({a, b, failed, n_a});
  EXPECT_NE(text.find("  P1    40.0 %  heterogeneous\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  P1     4.0 %  async save  (under the goal)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  P1    48.5 %  sync save\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  P2       -    fully_reshardable  (no passing cases)\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("P3 "), std::string::npos) << text;  // not run: left out
  EXPECT_NE(text.find("1 of 3 measured classes under the goal\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace ckptspec
