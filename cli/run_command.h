// `ckptspec run`: runs the property catalog against targets and prints the kill matrix
// (target × property: pass, KILLED with time to detection, cases and shrunk size, or n/a; then each
// target's verdict against its expectation), with optional JSON and JUnit reports. With no
// --target, the reference and every catalog mutant.
//
// Exit codes: 0 every selected target meets its expectation: the reference (and any target not
// marked expect_killed) passes every selected property or finds it n/a, and every mutant is
// KILLED by at least one; 1 some target does not (a failure on the reference, a mutant that
// survived, a property that gave up or errored on the reference); 2 invalid arguments.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "properties/runner.h"

namespace ckptspec {

struct RunOptions {
  std::vector<std::string> targets{"all"};
  // Shared libraries to load before resolving targets (properties/plugin.h); their targets can
  // then be named by --target.
  std::vector<std::string> plugins;
  std::string properties;  // comma-separated ids; empty: all
  uint64_t seed = 1;
  // "N" cases per property, or a time such as "30s" / "2m" spread over the properties (runs
  // batches of 100 cases with successive seeds until the time is up or a case fails).
  std::string budget = "100";
  std::string json_out;
  std::string junit_out;
  bool quiet = false;    // no progress line
  bool details = false;  // also describe every kill of a mutant (not only the first)
};

CLI::App* AddRunCommand(CLI::App& app, RunOptions* options);

int RunRunCommand(const RunOptions& options, std::ostream& out, std::ostream& err);

// Parses --budget: cases (> 0) or seconds (> 0). Errors name the value.
struct Budget {
  int cases = 0;
  double seconds = 0;
};
Status ParseBudget(const std::string& text, Budget* out);

// A target's verdict from its outcomes: "clean" / "FAILED" for a target expected to pass,
// "killed" / "SURVIVED" for a mutant. met is whether that is the expectation.
struct TargetVerdict {
  std::string text;
  bool met = false;
};
TargetVerdict JudgeTarget(const std::vector<PropertyOutcome>& outcomes, const std::string& target,
                          bool expect_killed);

// The reports, from the outcomes of one run. expect_killed names the mutant targets.
std::string MatrixText(const std::vector<PropertyOutcome>& outcomes,
                       const std::vector<std::string>& expect_killed = {});
// JSON: {"format": "ckptspec.run", "version": 1, "seed", "targets": [{name, expect, verdict, met}],
// "outcomes": [...]}.
std::string OutcomesJson(const std::vector<PropertyOutcome>& outcomes, uint64_t seed,
                         const std::vector<std::string>& expect_killed = {});
std::string OutcomesJUnit(const std::vector<PropertyOutcome>& outcomes);

}  // namespace ckptspec
