// Per-target expectation files (docs/ADAPTERS.md, "Expectations"): kept apart from the tests, they
// say which properties a target is known to fail, with the reason, and which do not apply to it,
// in the manner of web-platform-tests' expectation files.
//
//   {"format": "ckptspec.expectations", "version": 1,
//    "properties": {"P13": {"expect": "n/a", "reason": "storage is the real disk"},
//                   "P3":  {"expect": "fail", "reason": "resharding of irregular grids: issue 12"}}}
//
// A property the file does not list is expected to pass. "fail" and "n/a" need a non-empty
// reason. An expected "fail" may add "match": a substring of the failure's message; a failure
// without it (a hang, an error of another kind) is then an UNEXPECTED failure, so that an expected
// failure never absorbs a different one. Reading never throws; errors name the file and the
// member.
//
// "known": [{"finding": "F9", "match": "a view of a leaf Variable", "reason": "..."}] lists
// upstream defects already found (docs/FINDINGS.md): a case that fails with a message containing
// `match` is set aside as that finding's and the property's search goes on (runner.h), so one
// known defect never hides another behind the same property -- nor stands in for it: a failure
// the file expects must still happen, for another reason than a known one.
//
// "extends": "base.json" (a file name in the same directory, no path) takes every expectation of
// that file first and lets this one add or replace properties, so that a row of a version matrix
// (megatron_core-0.19.2-torch-2.15.0.json) states only how it differs from its version's file. A
// base may extend another in turn (up to kMaxExpectationsChain files; no file twice).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/status.h"
#include "runner/runner.h"

namespace ckptspec {

enum class Expected { kPass, kFail, kNotApplicable };
const char* ExpectedName(Expected expected);  // "pass", "fail", "n/a"

struct Expectation {
  Expected expected = Expected::kPass;
  std::string reason;
  std::string match;  // kFail only: a substring the failure's message must hold ("": any failure)
};

struct Expectations {
  std::string source;   // the file, for messages
  std::string extends;  // the base file's name, as written ("" without one)
  std::map<std::string, Expectation> properties;  // by id ("P13"); ids are catalog ids
  // Known findings every property of the target steps over (runner.h, KnownFailure), with why
  // each is known; a base's come first.
  std::vector<KnownFailure> known;
  std::vector<std::string> known_reasons;  // parallel to `known`
  const Expectation& For(const std::string& property) const;
};

// Parses the form above; `source` names the text in errors. Unknown property ids, unknown
// members and expectations other than "pass", "fail", "n/a" are errors. `extends` is recorded,
// not followed.
Status ParseExpectations(const std::string& text, const std::string& source, Expectations* out);
// Completes a file that extends `base` (the file its `extends` names, read and completed with its
// own bases): *own keeps its properties and takes the base's others, and the base's known
// findings come first. (Reading the base is the caller's: cli/expectations_file.h.)
Status ApplyBase(const Expectations& base, Expectations* own);

// How an outcome compares with its expectation. A failure, an error and a run that gave up all
// count as "fail"; under an expectation with `match`, only one whose message holds it.
struct Judgement {
  bool matches = false;
  // The matrix cell: "pass", "n/a", "xfail" (an expected failure), "UNEXPECTED FAIL",
  // "UNEXPECTED FAIL for another reason" (an expected failure's message lacks its match),
  // "UNEXPECTED pass", "UNEXPECTED n/a".
  std::string cell;
  // The same in one character, for the compact matrix: '.', '-', 'x', 'P', 'N', 'F'.
  char symbol = '?';
};
Judgement Judge(const Expectation& expectation, const PropertyOutcome& outcome);

}  // namespace ckptspec
