// `ckptspec run`: runs the property catalog against targets and prints the matrix
// (target × property: pass, FAIL with time to detection and shrunk size, or n/a), with optional
// JSON and JUnit reports.
//
// Exit codes: 0 every selected property passes (or is n/a) on every selected target, or, with
// --expectations, every outcome is the one the file expects; 1 otherwise (a property failed, gave
// up or errored; or an outcome differs from its expectation); 2 invalid arguments, an expectations
// file that does not read, or an adapter whose probe fails.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "properties/expectations.h"
#include "properties/runner.h"

namespace ckptspec {

struct RunOptions {
  // Empty: "reference", unless adapters are given.
  std::vector<std::string> targets;
  // Adapter commands (docs/PROTOCOL.md, docs/ADAPTERS.md), each run as a target.
  std::vector<std::string> adapters;
  double adapter_timeout_s = 60;  // per request to an adapter
  // A per-target expectations file (properties/expectations.h) every target is judged by.
  std::string expectations;
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
  bool quiet = false;  // no progress line
};

CLI::App* AddRunCommand(CLI::App& app, RunOptions* options);

int RunRunCommand(const RunOptions& options, std::ostream& out, std::ostream& err);

// Parses --budget: cases (> 0) or seconds (> 0). Errors name the value.
struct Budget {
  int cases = 0;
  double seconds = 0;
};
Status ParseBudget(const std::string& text, Budget* out);

// The reports, from the outcomes of one run. With `expectations`, cells show how each outcome
// compares with its expectation (Judge: "xfail", "UNEXPECTED pass", ...), the JSON gives each
// outcome's "expected" and "matches", and JUnit counts an expected failure as skipped and an
// unexpected pass or n/a as a failure.
std::string MatrixText(const std::vector<PropertyOutcome>& outcomes,
                       const Expectations* expectations = nullptr);
std::string OutcomesJson(const std::vector<PropertyOutcome>& outcomes, uint64_t seed,
                         const Expectations* expectations = nullptr);
std::string OutcomesJUnit(const std::vector<PropertyOutcome>& outcomes,
                          const Expectations* expectations = nullptr);

}  // namespace ckptspec
