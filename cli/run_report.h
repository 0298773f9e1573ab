// The reports of `ckptspec run` (cli/run_command.h), from the outcomes of one run, each judged by
// cli/run_judging.h (JudgeOutcome, JudgeTarget) and by nothing else. The text reports are in
// run_report_text.cc, the JSON in run_report_json.cc, JUnit in run_report_junit.cc.
//
// MatrixText: a row per target (its name, its verdict) and one character per property (the
// outcome's OutcomeJudgement::symbol), with a legend: a mutant's cells are its outcomes (K killed,
// . pass, - n/a); other targets' cells, under an expectations file, how each outcome compares with
// it (x an expected failure, F, P, N an unexpected failure, pass, n/a). With the 20 properties and
// the catalog's target names it is under 120 columns wide.
// KillTimesText lists, per target, each failure's time to detection, cases and shrunk size
// (`--details`); empty when nothing failed.
// OutcomeDescriptions, below the matrix: every outcome that does not meet its target's
// expectation, in full; each expected failure in a line; each surviving mutant named; the kills of
// mutants are counted in one line (described in full, each, with `details`).
// AdapterReplayHint: for each failed outcome of the adapter target `target`, the one command that
// replays its case against the same adapter (`ckptspec replay --adapter COMMAND ...`, quoted for
// /bin/sh); empty when none failed.
// CoverageText: every scenario class of properties/scenario_classes.h with its share of the
// property's passing cases over all targets of the run, a mark on each under kScenarioClassGoal,
// and a count of those; a property the run ran without a passing outcome (n/a, failed) shows
// "no passing cases" instead of a share, and one it did not run is left out (`--coverage`).
// OutcomesJson has one entry per target (expect, verdict, met) and per outcome (with "expected"
// and "matches" under a file).
// OutcomesJUnit has a case per outcome and one "killed" case per mutant: an expected failure or an
// n/a is skipped, an outcome that does not meet its (non-mutant) target's expectation is a failure,
// and a surviving mutant is a failed "killed" case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/run_judging.h"
#include "runner/runner.h"

namespace ckptspec {

std::string MatrixText(const std::vector<PropertyOutcome>& outcomes,
                       const RunJudging& judging = {});
std::string KillTimesText(const std::vector<PropertyOutcome>& outcomes);
std::string CoverageText(const std::vector<PropertyOutcome>& outcomes);
std::string AdapterReplayHint(const std::vector<PropertyOutcome>& outcomes,
                              const std::string& target, const std::string& command,
                              double timeout_s);
std::string OutcomeDescriptions(const std::vector<PropertyOutcome>& outcomes,
                                const RunJudging& judging, bool details);
std::string OutcomesJson(const std::vector<PropertyOutcome>& outcomes, uint64_t seed,
                         const RunJudging& judging = {});
std::string OutcomesJUnit(const std::vector<PropertyOutcome>& outcomes,
                          const RunJudging& judging = {});

}  // namespace ckptspec
