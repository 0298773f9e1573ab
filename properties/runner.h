// Runs catalog properties against a target outside GoogleTest (the `ckptspec run` command, the
// kill matrix, benchmarks): RapidCheck's checkProperty with explicit parameters, timed, with the
// outcome kept as data instead of printed.
//
// Contracts:
//  - Deterministic: the same property, factory and RunParams give the same outcome (RapidCheck
//    with a fixed seed generates and shrinks the same cases).
//  - A property not applicable to the factory is kNotApplicable with the reason; it never runs.
//  - time_to_failure_s measures until the first failing case, before shrinking; seconds the
//    whole run, shrinking included.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "properties/property.h"

namespace ckptspec {

struct RunParams {
  uint64_t seed = 1;
  int max_success = 100;  // cases that must pass
  int max_size = 100;     // RapidCheck's size bound
  bool shrink = true;
};

enum class Verdict { kPass, kFail, kNotApplicable, kGaveUp, kError };
const char* VerdictName(Verdict verdict);  // "pass", "FAIL", "n/a", "gave up", "error"

struct PropertyOutcome {
  std::string property;  // "P7"
  std::string target;
  Verdict verdict = Verdict::kError;
  int cases = 0;                   // cases run: successes (+1 for the failing one)
  double seconds = 0;              // whole run, shrinking included
  double time_to_failure_s = 0;    // kFail: until the first failing case
  std::string message;             // kFail: the failure; kNotApplicable: the reason; else details
  // kFail: the shrunk counterexample (name, value) pairs and their total printed size.
  std::vector<std::pair<std::string, std::string>> counterexample;
  size_t shrunk_size = 0;
  std::string reproduce;           // kFail: RC_PARAMS to replay this failure in ctest or run
};

PropertyOutcome RunProperty(const Property& property, const TargetFactory& factory,
                            const RunParams& params);

// Multi-line human form of an outcome (scenario, counterexample, reproduce line).
std::string DescribeOutcome(const PropertyOutcome& outcome);

}  // namespace ckptspec
