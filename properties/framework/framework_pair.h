// A framework under test with the spec's twin beside it: every operation a framework property
// makes runs on both, the target (a framework adapter, or the spec's framework over a mutant) and
// a SpecFramework over the reference (harness/spec_framework.h). The twin is how the spec
// answers for the same job what no observation can: whether a build, a train step, a save or a
// load must succeed, and whether a fault makes the rerun machine ask for a fault save. The
// target's observations are judged with the load rules (model/observation_rules.h).
//
// Contracts:
//  - Every operation returns OK when both sides did what the spec says, else an error naming
//    the target's failure or the disagreement ("the framework loaded where the spec refuses:
//    ..."). A failure of the twin where the target was never asked (an operation the generators
//    should not have drawn) is an error too, prefixed "the spec's twin".
//  - Load: *loaded is true when both loaded, false when both refused (the spec's reason in
//    *refusal when given); a disagreement is the error.
//  - log() is the story so far, one operation per line, for the scenario a failure prints.
#pragma once

#include <memory>
#include <string>

#include "harness/spec_framework.h"
#include "targets/target_factory.h"

namespace ckptspec {

class FrameworkPair {
 public:
  // Precondition: factory.is_framework().
  FrameworkPair(const TargetFactory& factory, const TargetOptions& options);

  Status Build(const FrameworkJob& job);
  Status Train(int64_t steps, bool fault = false);
  Status Save(bool async = false, FrameworkSaveResult* result = nullptr);
  Status Finalize();
  Status Load(const FrameworkLoad& load, bool* loaded, std::string* refusal = nullptr);
  Status Observe(Observation* out);
  // Ends both training processes and starts fresh ones over the same storage.
  void NewProcess();

  const std::string& log() const { return log_; }

 private:
  void Note(const std::string& line) { log_ += "  " + line + "\n"; }

  std::unique_ptr<FrameworkUnderTest> target_;
  SpecFramework twin_;
  std::string log_;
};

}  // namespace ckptspec
