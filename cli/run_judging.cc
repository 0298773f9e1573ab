#include "cli/run_judging.h"

#include <algorithm>

namespace ckptspec {

bool RunJudging::IsMutant(const std::string& target) const {
  return std::find(expect_killed.begin(), expect_killed.end(), target) != expect_killed.end();
}

const char* TargetExpectationName(TargetExpectation expectation) {
  switch (expectation) {
    case TargetExpectation::kKilled:
      return "killed";
    case TargetExpectation::kAsExpected:
      return "as expected";
    case TargetExpectation::kClean:
      return "clean";
  }
  return "?";
}

const Expectations* RunJudging::ExpectationsOf(const std::string& target) const {
  if (IsMutant(target) || declared_clean.count(target)) return nullptr;
  auto it = declared.find(target);
  return it != declared.end() ? &it->second : expectations;
}

bool RunJudging::ShrinksFailures(const std::string& target, const std::string& property) const {
  const Expectations* e = ExpectationsOf(target);
  return e == nullptr || e->For(property).expected != Expected::kFail;
}

TargetExpectation ExpectationOf(const std::string& target, const RunJudging& judging) {
  if (judging.IsMutant(target)) return TargetExpectation::kKilled;
  return judging.ExpectationsOf(target) ? TargetExpectation::kAsExpected
                                        : TargetExpectation::kClean;
}

OutcomeJudgement JudgeOutcome(const PropertyOutcome& o, const RunJudging& judging) {
  OutcomeJudgement j;
  j.held_to = ExpectationOf(o.target, judging);
  if (j.held_to == TargetExpectation::kAsExpected) {
    j.expected = &judging.ExpectationsOf(o.target)->For(o.property);
    const Judgement against_file = Judge(*j.expected, o);
    j.meets = against_file.matches;
    j.words = against_file.cell;
    j.symbol = against_file.symbol;
    return j;
  }
  const bool mutant = j.held_to == TargetExpectation::kKilled;
  j.meets = mutant ? o.verdict == Verdict::kFail
                   : o.verdict == Verdict::kPass || o.verdict == Verdict::kNotApplicable;
  j.words = VerdictName(o.verdict);
  switch (o.verdict) {
    case Verdict::kPass:
      j.symbol = '.';
      break;
    case Verdict::kNotApplicable:
      j.symbol = '-';
      break;
    case Verdict::kFail:
      j.symbol = mutant ? 'K' : 'F';
      break;
    case Verdict::kGaveUp:
      j.symbol = 'g';
      break;
    case Verdict::kError:
      j.symbol = 'E';
      break;
  }
  return j;
}

TargetVerdict JudgeTarget(const std::vector<PropertyOutcome>& outcomes, const std::string& target,
                          const RunJudging& judging) {
  const TargetExpectation expectation = ExpectationOf(target, judging);
  bool any = false, all = true;
  for (const PropertyOutcome& o : outcomes) {
    if (o.target != target) continue;
    const bool meets = JudgeOutcome(o, judging).meets;
    any = any || meets;
    all = all && meets;
  }
  switch (expectation) {
    case TargetExpectation::kKilled:
      return {any ? "killed" : "SURVIVED", any};
    case TargetExpectation::kAsExpected:
      return {all ? "as expected" : "UNEXPECTED", all};
    case TargetExpectation::kClean:
      break;
  }
  return {all ? "clean" : "FAILED", all};
}

std::vector<std::string> TargetsInOrder(const std::vector<PropertyOutcome>& outcomes) {
  std::vector<std::string> targets;
  for (const PropertyOutcome& o : outcomes) {
    if (std::find(targets.begin(), targets.end(), o.target) == targets.end())
      targets.push_back(o.target);
  }
  return targets;
}

bool EveryTargetMet(const std::vector<PropertyOutcome>& outcomes, const RunJudging& judging) {
  for (const std::string& t : TargetsInOrder(outcomes)) {
    if (!JudgeTarget(outcomes, t, judging).met) return false;
  }
  return true;
}

}  // namespace ckptspec
