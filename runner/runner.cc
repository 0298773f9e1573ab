#include "runner/runner.h"

#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

#include "generators/world_cap.h"
#include "runner/reproduce_string.h"
#include "properties/scenario_classes.h"

namespace ckptspec {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Records when the first failing case finished, and that case; prints nothing.
class FirstFailureListener : public rc::detail::TestListener {
 public:
  explicit FirstFailureListener(Clock::time_point start) : start_(start) {}
  void onTestCaseFinished(const rc::detail::CaseDescription& description) override {
    if (description.result.type == rc::detail::CaseResult::Type::Failure && first_failure_s_ < 0) {
      first_failure_s_ = SecondsSince(start_);
      first_failure_ = description;
    }
  }
  const rc::detail::CaseDescription& first_failure() const { return first_failure_; }
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  double first_failure_s() const { return first_failure_s_; }

 private:
  Clock::time_point start_;
  double first_failure_s_ = -1;
  rc::detail::CaseDescription first_failure_;
};

// RapidCheck prints its global configuration ("Using configuration: seed=...") to stderr the first
// time anything asks for it. The runner passes its own parameters to every check, so that line
// names a seed nothing uses: it is swallowed once, here, before the first check.
void InitRapidCheckQuietly() {
  static const bool done = [] {
    std::streambuf* saved = std::cerr.rdbuf(nullptr);
    rc::detail::configuration();
    std::cerr.rdbuf(saved);
    return true;
  }();
  (void)done;
}

std::string MetadataId(const std::string& target, const std::string& property) {
  return target + "/" + property;
}

// Decoded and checked (runner/reproduce_string.h) before RapidCheck sees any of it.
Status ParseReproduceConfig(const std::string& reproduce, rc::detail::Configuration* config) {
  DecodedReproduce decoded;
  CKPTSPEC_RETURN_IF_ERROR(DecodeReproduceString(reproduce, &decoded));
  config->testParams = decoded.params;
  config->reproduce[decoded.id()] = decoded.reproduce;
  return Status::OK();
}

}  // namespace

Status ParseReproduceKey(const std::string& reproduce, std::string* target, std::string* property) {
  rc::detail::Configuration config;
  CKPTSPEC_RETURN_IF_ERROR(ParseReproduceConfig(reproduce, &config));
  if (config.reproduce.size() != 1) {
    return Status::InvalidArgument("reproduce string holds " +
                                   std::to_string(config.reproduce.size()) +
                                   " reproduce entries; expected exactly one (target/property)");
  }
  const std::string& id = config.reproduce.begin()->first;
  const size_t slash = id.rfind('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == id.size()) {
    return Status::InvalidArgument("reproduce entry '" + id +
                                   "' is not of the form target/property");
  }
  *target = id.substr(0, slash);
  *property = id.substr(slash + 1);
  return Status::OK();
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kNotApplicable:
      return "n/a";
    case Verdict::kGaveUp:
      return "gave up";
    case Verdict::kError:
      return "error";
  }
  return "?";
}

PropertyOutcome RunProperty(const Property& property, const TargetFactory& factory,
                            const RunParams& params) {
  PropertyOutcome outcome;
  outcome.property = property.id;
  outcome.target = factory.name;
  const std::string reason = NotApplicableReason(property, factory);
  if (!reason.empty()) {
    outcome.verdict = Verdict::kNotApplicable;
    outcome.message = reason;
    return outcome;
  }
  InitRapidCheckQuietly();
  const gen::ScopedWorldCap world_cap(factory.max_world_size);
  rc::detail::TestParams test_params;
  test_params.seed = params.seed;
  test_params.maxSuccess = params.max_success;
  test_params.maxSize = params.max_size;
  const bool drawn_from_a_recording =
      property.drawn_from_a_recording && factory.disk_faults && !factory.fault_injection;
  test_params.disableShrinking = !params.shrink || drawn_from_a_recording;
  rc::detail::TestMetadata metadata;
  metadata.id = MetadataId(factory.name, property.id);
  metadata.description = property.name;
  std::unordered_map<std::string, rc::detail::Reproduce> reproduce;
  if (!params.reproduce.empty()) {
    rc::detail::Configuration config;
    const Status s = ParseReproduceConfig(params.reproduce, &config);
    if (!s.ok() || config.reproduce.count(metadata.id) == 0) {
      outcome.verdict = Verdict::kError;
      outcome.message =
          s.ok() ? "the reproduce string has no entry for " + metadata.id : s.message();
      return outcome;
    }
    test_params = config.testParams;
    reproduce = config.reproduce;
  }

  // Every target a case makes records in `events` what its processes did outside engine calls.
  CaseEvents events;
  TargetFactory watched = factory;
  const auto with_events = [&events](TargetOptions options) {
    options.events = &events;
    return options;
  };
  if (factory.make) {
    watched.make = [with_events, make = factory.make](const TargetOptions& options) {
      return make(with_events(options));
    };
  }
  if (factory.make_framework) {
    watched.make_framework = [with_events,
                              make = factory.make_framework](const TargetOptions& options) {
      return make(with_events(options));
    };
  }
  std::map<std::string, int> known_hits;
  const auto check_case = [&] {
    // A case that timed out failed with that timeout; shrinking proposes cases that would
    // each hang until the deadline again, so none of them runs: the timed-out case is the one
    // reported.
    if (!events.timed_out.ok())
      RC_DISCARD("an earlier case of this run timed out; not run while shrinking");
    events.release_fault = Status::OK();
    try {
      RunBody(property, watched);
    } catch (const rc::detail::CaseResult& result) {
      if (result.type != rc::detail::CaseResult::Type::Failure) throw;
      for (const KnownFailure& known : params.known) {
        if (!known.match.empty() && result.description.find(known.match) != std::string::npos) {
          ++known_hits[known.finding];
          RC_DISCARD("set aside: known finding " + known.finding);
        }
      }
      throw;
    }
    if (!events.timed_out.ok()) RC_FAIL(events.timed_out.message());
    if (!events.release_fault.ok()) RC_FAIL(events.release_fault.message());
  };

  const auto start = Clock::now();
  FirstFailureListener listener(start);
  const rc::detail::TestResult result = rc::detail::checkProperty(
      rc::detail::toProperty(check_case), metadata, test_params, listener, reproduce);
  outcome.seconds = SecondsSince(start);
  outcome.known_hits.assign(known_hits.begin(), known_hits.end());

  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error error;
  if (result.match(success)) {
    outcome.verdict = Verdict::kPass;
    outcome.cases = success.numSuccess;
    std::map<std::string, int> counts;
    for (const auto& [tags, n] : success.distribution) {
      std::set<std::string> distinct;
      for (const std::string& tag : tags) distinct.insert(UnquoteTag(tag));
      for (const std::string& tag : distinct) counts[tag] += n;
    }
    outcome.tag_counts.assign(counts.begin(), counts.end());
  } else if (result.match(failure)) {
    outcome.verdict = Verdict::kFail;
    outcome.cases = failure.numSuccess + 1;
    outcome.time_to_failure_s =
        listener.first_failure_s() >= 0 ? listener.first_failure_s() : outcome.seconds;
    outcome.message = failure.description;
    outcome.counterexample = failure.counterExample;
    if ((!events.timed_out.ok() || drawn_from_a_recording) && listener.first_failure().example) {
      // RapidCheck evaluates the reported case once more after shrinking, and that run was
      // discarded (a timed-out case is not run again) or judged another recording (its
      // processes interleaved otherwise, and it may pass): the case as it ran is the failure.
      // No shrink was accepted, so the reproduce string below names that case.
      outcome.message = listener.first_failure().result.description;
      outcome.counterexample = listener.first_failure().example();
    }
    for (const auto& [name, value] : failure.counterExample) outcome.shrunk_size += value.size();
    rc::detail::Configuration config;
    config.testParams = test_params;
    config.reproduce[metadata.id] = failure.reproduce;
    std::ostringstream reproduce;
    reproduce << config;
    outcome.reproduce = reproduce.str();
  } else if (result.match(gave_up)) {
    outcome.verdict = Verdict::kGaveUp;
    outcome.cases = gave_up.numSuccess;
    outcome.message = gave_up.description;
  } else if (result.match(error)) {
    outcome.verdict = Verdict::kError;
    outcome.message = error.description;
    // RapidCheck reports a replayed case that passes as this error (rapidcheck's
    // checkProperty with a reproduce map): for a replay it is the answer "it passes now".
    if (!reproduce.empty() && error.description == "Reproduced result is not a failure") {
      outcome.verdict = Verdict::kPass;
      outcome.cases = 1;
      outcome.message = "the recorded case passes now";
    }
  }
  return outcome;
}

std::string DescribeOutcome(const PropertyOutcome& o) {
  std::ostringstream os;
  os << o.target << " " << o.property << ": " << VerdictName(o.verdict) << " (" << o.cases
     << " cases, " << o.seconds << " s)";
  if (o.verdict == Verdict::kNotApplicable || o.verdict == Verdict::kGaveUp ||
      o.verdict == Verdict::kError) {
    os << ": " << o.message << "\n";
    return os.str();
  }
  os << "\n";
  for (const auto& [finding, cases] : o.known_hits) {
    os << "  stepped over known finding " << finding << " in " << cases << " case"
       << (cases == 1 ? "" : "s") << "\n";
  }
  if (o.verdict != Verdict::kFail) return os.str();
  os << "  first failure after " << o.time_to_failure_s << " s\n  counterexample:\n";
  for (const auto& [name, value] : o.counterexample) os << "    " << name << ": " << value << "\n";
  os << "  " << o.message << "\n  reproduce: RC_PARAMS=\"" << o.reproduce << "\"\n";
  return os.str();
}

}  // namespace ckptspec
