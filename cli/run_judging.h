// How `ckptspec run` (cli/run_command.h) judges what it ran: each (target, property) outcome
// against what the run expects of its target (JudgeOutcome), and each target by its outcomes
// (JudgeTarget). Every report (cli/run_report.h) and the exit code judge through these two.
//
// What a target is held to (TargetExpectation):
//  - a mutant (TargetFactory::expect_killed): to be killed, i.e. to fail at least one selected
//    property, whether or not there is an expectations file;
//  - a plugin's target that declares its expectations (runner/plugin.h): to be clean, or to
//    have exactly the outcomes it lists (Judge);
//  - any other target, under an expectations file (runner/expectations.h): to have exactly the
//    outcomes the file expects;
//  - any other target without one: to pass every selected property or find it n/a.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runner/expectations.h"
#include "runner/runner.h"

namespace ckptspec {

struct RunJudging {
  // The --expectations file, or null: it judges the targets that are neither mutants nor declare
  // their own.
  const Expectations* expectations = nullptr;
  std::map<std::string, Expectations> declared;  // by target: what plugins listed
  std::set<std::string> declared_clean;          // plugins' targets declared clean
  std::vector<std::string> expect_killed;        // the mutant targets' names
  bool IsMutant(const std::string& target) const;
  // The expectations `target` is judged by outcome by outcome: its listed ones, else the file's;
  // null for a mutant, a target declared clean, or without either.
  const Expectations* ExpectationsOf(const std::string& target) const;
  // Whether a failure of `property` on `target` is shrunk: not when the target's expectations
  // expect the property to fail (a known failure is reported as found; shrinking through adapter
  // processes takes minutes). Always for mutants and clean targets.
  bool ShrinksFailures(const std::string& target, const std::string& property) const;
};

enum class TargetExpectation { kKilled, kAsExpected, kClean };
// "killed", "as expected", "clean".
const char* TargetExpectationName(TargetExpectation expectation);
TargetExpectation ExpectationOf(const std::string& target, const RunJudging& judging);

struct OutcomeJudgement {
  TargetExpectation held_to = TargetExpectation::kClean;  // what the outcome's target is held to
  // The file's expectation of the property (kAsExpected only; else null).
  const Expectation* expected = nullptr;
  // Whether the outcome meets its target's expectation: for a mutant, whether it kills it (a
  // failure); under a file, whether it is what the file expects; else whether it passed or was
  // n/a. A mutant meets its expectation with one such outcome, any other target with all of them.
  bool meets = false;
  // The outcome in words: under a file, Judgement::cell ("xfail", "UNEXPECTED pass", ...); else
  // its verdict's name (VerdictName).
  std::string words;
  // Its matrix cell: under a file, Judgement::symbol; else '.' pass, '-' n/a, 'K' a mutant's
  // failure (a kill), 'F' another target's failure, 'g' gave up, 'E' error.
  char symbol = '?';
};
OutcomeJudgement JudgeOutcome(const PropertyOutcome& outcome, const RunJudging& judging);

// A target's verdict from its outcomes: "killed" / "SURVIVED" for a mutant; "as expected" /
// "UNEXPECTED" under an expectations file; else "clean" / "FAILED". met is whether that is the
// expectation.
struct TargetVerdict {
  std::string text;
  bool met = false;
};
TargetVerdict JudgeTarget(const std::vector<PropertyOutcome>& outcomes, const std::string& target,
                          const RunJudging& judging);

// The targets of `outcomes`, in the order of their first outcome.
std::vector<std::string> TargetsInOrder(const std::vector<PropertyOutcome>& outcomes);
// Whether every target of `outcomes` meets its expectation (`ckptspec run` exits 0).
bool EveryTargetMet(const std::vector<PropertyOutcome>& outcomes, const RunJudging& judging);

}  // namespace ckptspec
