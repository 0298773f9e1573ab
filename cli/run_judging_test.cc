// How `ckptspec run` judges outcomes and targets (run_judging.h).
#include "cli/run_judging.h"

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

PropertyOutcome Outcome(const std::string& target, const std::string& property, Verdict verdict) {
  PropertyOutcome o;
  o.target = target;
  o.property = property;
  o.verdict = verdict;
  return o;
}

TEST(RunJudging, TargetsAreJudgedAgainstTheirExpectation) {
  PropertyOutcome pass, fail, na;
  pass.target = fail.target = na.target = "t";
  pass.verdict = Verdict::kPass;
  fail.verdict = Verdict::kFail;
  na.verdict = Verdict::kNotApplicable;
  const RunJudging plain;
  RunJudging mutant;
  mutant.expect_killed = {"t"};
  EXPECT_EQ(JudgeTarget({pass, na}, "t", plain).text, "clean");
  EXPECT_TRUE(JudgeTarget({pass, na}, "t", plain).met);
  EXPECT_EQ(JudgeTarget({pass, fail}, "t", plain).text, "FAILED");
  EXPECT_FALSE(JudgeTarget({pass, fail}, "t", plain).met);
  EXPECT_EQ(JudgeTarget({pass, fail}, "t", mutant).text, "killed");
  EXPECT_TRUE(JudgeTarget({pass, fail}, "t", mutant).met);
  EXPECT_EQ(JudgeTarget({pass, na}, "t", mutant).text, "SURVIVED");
  EXPECT_FALSE(JudgeTarget({pass, na}, "t", mutant).met);
  // Under an expectations file, a known failure is as expected; a mutant is still judged by kills.
  Expectations file;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P7": {"expect": "fail", "reason": "known"}}})",
                                "inline", &file)
                  .ok());
  fail.property = "P7";
  RunJudging judged;
  judged.expectations = &file;
  EXPECT_EQ(JudgeTarget({pass, fail}, "t", judged).text, "as expected");
  judged.expect_killed = {"t"};
  EXPECT_EQ(JudgeTarget({pass, fail}, "t", judged).text, "killed");
}

TEST(RunJudging, OnlyKnownFailuresGoUnshrunk) {
  Expectations file;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P7": {"expect": "fail", "reason": "known"},
                     "P13": {"expect": "n/a", "reason": "real disk"}}})",
                                "inline", &file)
                  .ok());
  RunJudging judging;
  EXPECT_TRUE(judging.ShrinksFailures("t", "P7"));  // no file: every failure is shrunk
  judging.expectations = &file;
  judging.expect_killed = {"m"};
  EXPECT_FALSE(judging.ShrinksFailures("t", "P7"));
  EXPECT_TRUE(judging.ShrinksFailures("t", "P13"));
  EXPECT_TRUE(judging.ShrinksFailures("t", "P2"));
  EXPECT_TRUE(judging.ShrinksFailures("m", "P7"));  // a mutant's kill is always shrunk
}

TEST(RunJudging, EachOutcomeIsJudgedAgainstItsTargetsExpectation) {
  Expectations file;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P7": {"expect": "fail", "reason": "known"}}})",
                                "inline", &file)
                  .ok());
  RunJudging judging;
  judging.expect_killed = {"m"};
  // Without a file: a clean target must pass or find the property n/a; a mutant is met by a kill.
  const struct {
    Verdict verdict;
    bool clean_meets, mutant_meets;
    char clean_symbol, mutant_symbol;
  } plain[] = {{Verdict::kPass, true, false, '.', '.'},
               {Verdict::kNotApplicable, true, false, '-', '-'},
               {Verdict::kFail, false, true, 'F', 'K'},
               {Verdict::kGaveUp, false, false, 'g', 'g'},
               {Verdict::kError, false, false, 'E', 'E'}};
  for (const auto& c : plain) {
    const OutcomeJudgement clean = JudgeOutcome(Outcome("t", "P1", c.verdict), judging);
    EXPECT_EQ(clean.held_to, TargetExpectation::kClean);
    EXPECT_EQ(clean.meets, c.clean_meets) << VerdictName(c.verdict);
    EXPECT_EQ(clean.symbol, c.clean_symbol) << VerdictName(c.verdict);
    EXPECT_EQ(clean.words, VerdictName(c.verdict));
    EXPECT_EQ(clean.expected, nullptr);
    const OutcomeJudgement mutant = JudgeOutcome(Outcome("m", "P1", c.verdict), judging);
    EXPECT_EQ(mutant.held_to, TargetExpectation::kKilled);
    EXPECT_EQ(mutant.meets, c.mutant_meets) << VerdictName(c.verdict);
    EXPECT_EQ(mutant.symbol, c.mutant_symbol) << VerdictName(c.verdict);
  }
  // Under a file: another target's outcomes are compared with it; a mutant's are still kills.
  judging.expectations = &file;
  const OutcomeJudgement xfail = JudgeOutcome(Outcome("t", "P7", Verdict::kFail), judging);
  EXPECT_EQ(xfail.held_to, TargetExpectation::kAsExpected);
  EXPECT_TRUE(xfail.meets);
  EXPECT_EQ(xfail.symbol, 'x');
  EXPECT_EQ(xfail.words, "xfail");
  ASSERT_NE(xfail.expected, nullptr);
  EXPECT_EQ(xfail.expected->reason, "known");
  const OutcomeJudgement unexpected_pass =
      JudgeOutcome(Outcome("t", "P7", Verdict::kPass), judging);
  EXPECT_FALSE(unexpected_pass.meets);
  EXPECT_EQ(unexpected_pass.symbol, 'P');
  EXPECT_EQ(unexpected_pass.words, "UNEXPECTED pass");
  const OutcomeJudgement unexpected_na =
      JudgeOutcome(Outcome("t", "P1", Verdict::kNotApplicable), judging);
  EXPECT_FALSE(unexpected_na.meets);
  EXPECT_EQ(unexpected_na.symbol, 'N');
  const OutcomeJudgement kill = JudgeOutcome(Outcome("m", "P7", Verdict::kFail), judging);
  EXPECT_EQ(kill.held_to, TargetExpectation::kKilled);
  EXPECT_TRUE(kill.meets);
  EXPECT_EQ(kill.symbol, 'K');
  EXPECT_EQ(kill.expected, nullptr);
  EXPECT_STREQ(TargetExpectationName(ExpectationOf("t", judging)), "as expected");
  EXPECT_STREQ(TargetExpectationName(ExpectationOf("m", judging)), "killed");
  // The run meets its expectations only when every target does.
  EXPECT_TRUE(EveryTargetMet(
      {Outcome("t", "P7", Verdict::kFail), Outcome("m", "P1", Verdict::kFail)}, judging));
  EXPECT_FALSE(EveryTargetMet(
      {Outcome("t", "P7", Verdict::kFail), Outcome("m", "P1", Verdict::kPass)}, judging));
  EXPECT_EQ(TargetsInOrder({Outcome("m", "P1", Verdict::kPass), Outcome("t", "P1", Verdict::kPass),
                            Outcome("m", "P2", Verdict::kPass)}),
            (std::vector<std::string>{"m", "t"}));
}

// A plugin's declared expectations: a target's own list wins over the --expectations file, and a
// target declared clean is clean under a file too.
TEST(RunJudging, DeclaredExpectationsJudgeTheirTargetsBeforeTheFile) {
  Expectations file, listed;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P7": {"expect": "fail", "reason": "known"}}})",
                                "the file", &file)
                  .ok());
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P17": {"expect": "fail", "reason": "timestamps"}}})",
                                "plugin 'p.so', target 'w'", &listed)
                  .ok());
  RunJudging judging;
  judging.expectations = &file;
  judging.declared.emplace("w", listed);
  judging.declared_clean.insert("c");
  EXPECT_EQ(judging.ExpectationsOf("w"), &judging.declared.at("w"));
  EXPECT_EQ(judging.ExpectationsOf("t"), &file);
  EXPECT_EQ(judging.ExpectationsOf("c"), nullptr);
  EXPECT_TRUE(JudgeOutcome(Outcome("w", "P17", Verdict::kFail), judging).meets);
  EXPECT_FALSE(JudgeOutcome(Outcome("w", "P7", Verdict::kFail), judging).meets);
  EXPECT_EQ(JudgeTarget({Outcome("w", "P17", Verdict::kFail), Outcome("w", "P1", Verdict::kPass)},
                        "w", judging)
                .text,
            "as expected");
  EXPECT_EQ(ExpectationOf("c", judging), TargetExpectation::kClean);
  EXPECT_TRUE(JudgeOutcome(Outcome("c", "P1", Verdict::kNotApplicable), judging).meets);
  EXPECT_EQ(JudgeTarget({Outcome("c", "P7", Verdict::kFail)}, "c", judging).text, "FAILED");
}

}  // namespace
}  // namespace ckptspec
