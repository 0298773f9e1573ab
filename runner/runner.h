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
//  - A case that fails with a known finding's message (RunParams::known) is discarded and counted
//    in known_hits, never reported as the property's failure; too many such cases make the run
//    give up, as RapidCheck's discards do.
//  - Targets served by processes are judged on what those did outside engine calls too
//    (CaseEvents): a case whose adapter timed out fails with the timeout, and no case is run
//    after it (shrinking stops there: a hang costs one timeout, not one per shrink step); a case
//    whose adapter left processes behind fails with that verdict.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "properties/property.h"

namespace ckptspec {

// An upstream defect already found and recorded (an expectations file's "known", docs/ADAPTERS.md):
// a case whose failure message contains `match` is set aside as that finding's -- discarded, and
// counted -- and the search goes on, so that one known defect does not hide another behind the
// same property.
struct KnownFailure {
  std::string finding;  // its docs/FINDINGS.md id, "F9"
  std::string match;    // a substring of the failure message that identifies it
};

struct RunParams {
  uint64_t seed = 1;
  int max_success = 100;  // cases that must pass
  int max_size = 100;     // RapidCheck's size bound
  bool shrink = true;
  // An RC_PARAMS string from PropertyOutcome::reproduce. When set, its test parameters and its
  // reproduce entry for this target and property replace the fields above: the run replays the
  // recorded counterexample (and shrinks no further).
  std::string reproduce;
  // Known findings to step over (KnownFailure); a failure matching none is the property's.
  std::vector<KnownFailure> known;
};

enum class Verdict { kPass, kFail, kNotApplicable, kGaveUp, kError };
const char* VerdictName(Verdict verdict);  // "pass", "FAIL", "n/a", "gave up", "error"

struct PropertyOutcome {
  std::string property;  // "P7"
  std::string target;
  Verdict verdict = Verdict::kError;
  int cases = 0;                 // cases run: successes (+1 for the failing one)
  double seconds = 0;            // whole run, shrinking included
  double time_to_failure_s = 0;  // kFail: until the first failing case
  std::string message;           // kFail: the failure; kNotApplicable: the reason; else details
  // kFail: the shrunk counterexample (name, value) pairs and their total printed size.
  std::vector<std::pair<std::string, std::string>> counterexample;
  size_t shrunk_size = 0;
  std::string reproduce;  // kFail: RC_PARAMS to replay this failure in ctest or run
  // kPass: for each tag the property's cases carried (RC_TAG, RC_CLASSIFY; a string without the
  // quotes RapidCheck prints around it), how many of the passing cases carried it; sorted by
  // tag. What `ckptspec run --coverage` measures (properties/scenario_classes.h).
  std::vector<std::pair<std::string, int>> tag_counts;
  // For each known finding that cases hit (RunParams::known), how many were set aside (shrinking
  // included), by finding id.
  std::vector<std::pair<std::string, int>> known_hits;
};

PropertyOutcome RunProperty(const Property& property, const TargetFactory& factory,
                            const RunParams& params);

// The target and property a reproduce string (PropertyOutcome::reproduce) is for. InvalidArgument
// naming the problem when the string does not parse or holds no single "target/property" entry.
Status ParseReproduceKey(const std::string& reproduce, std::string* target, std::string* property);

// Multi-line human form of an outcome (scenario, counterexample, reproduce line).
std::string DescribeOutcome(const PropertyOutcome& outcome);

}  // namespace ckptspec
