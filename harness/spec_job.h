// The spec's own framework running a framework job (model/framework_job.h): the job's run
// (JobRunSpec) simulated by the model -- initial states, training, the rerun fault -- and saved
// and loaded through a Target (the reference's or a mutant's) as the harness does (SaveRun,
// ResumeRun). Observations are what a Megatron-style framework reports (docs/PROTOCOL.md,
// observe), computed from the states: each element of a copy is counted by the rank that holds
// its main replica under the canonical sharding (the pipeline stage of the parameter, DP rank 0
// and CP rank 0, the TP rank of its slice, or TP rank 0 for a parameter TP does not split; for
// an expert, its EP rank, expert-DP rank 0 and its expert-TP slice).
//
// It is the in-process framework under test of the framework properties' own tests (reference
// and mutants: spec_framework.h), the spec's twin a property runs beside every framework
// (framework_pair.h), and what the built-in adapter serves in its framework mode.
//
// Contracts: as FrameworkUnderTest's (targets/tested_framework.h), the target given to each
// Save and Load being the storage. Build refuses a second build (FailedPrecondition); a fault
// needs validate_results and an iteration completed in this process (FailedPrecondition).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/framework_job.h"
#include "model/observation.h"
#include "model/run_spec.h"
#include "targets/tested_framework.h"
#include "targets/target.h"

namespace ckptspec {

class SpecJob {
 public:
  Status Build(const FrameworkJob& job);
  bool built() const { return job_.has_value(); }
  Status Train(int64_t steps, bool fault, TrainResult* result);
  Status Save(Target& target, bool async, FrameworkSaveResult* result);
  Status Load(Target& target, const FrameworkLoad& load, int64_t* iteration);
  Status Observe(Observation* out) const;

 private:
  Status NeedsJob(const char* op) const;

  std::optional<FrameworkJob> job_;
  RunSpec run_;
  std::vector<TrainingState> states_;  // one per module
};

}  // namespace ckptspec
