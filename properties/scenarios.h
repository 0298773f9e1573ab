// The scenarios the resuming properties share, as plain functions: the RapidCheck properties
// generate the runs and assert on the result; the regression replay (regression_case.h) runs P1
// and P2 on a kept run.
//
// Contract: every scenario whose statement says "restart" ends the saving process and resumes in
// a new one (TargetUnderTest::NewProcess), so nothing the saving process kept in memory (a
// framework's cache, an engine's plan, an order that holds only within one process) can stand in
// for what the checkpoint lacks.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/run_spec.h"
#include "targets/target_factory.h"

namespace ckptspec {

// P1: train k, save (async or not) on a fresh target, restart, resume on the same layout without
// flags, train m; OK when that equals training k + m uninterrupted, else an error naming the
// failing call or the first difference ("resumed run differs from the uninterrupted one: ...").
Status ResumeEquivalenceScenario(const TargetFactory& factory, const RunSpec& run, int64_t k,
                                 int64_t m, bool async);

// P2: train k, save on a fresh target, restart, load on the same layout; OK when every state class
// comes back unchanged (as a restarted process holds it), else an error naming the call or the
// difference.
Status RoundTripScenario(const TargetFactory& factory, const RunSpec& run, int64_t k);

// What a resume in a new process came to, on both sides.
struct RestartedResume {
  Status spec;                          // ExpectedResume's verdict
  std::vector<TrainingState> expected;  // the spec's states, when `spec` is OK
  Status got;                           // the target's ResumeRun
  std::vector<TrainingState> resumed;   // the target's states, when `got` is OK
};

// Inspects every rank's dicts the target's framework made for the save before the engine gets
// them; an error ends the scenario with it.
using SaveDictsCheck = std::function<Status(const std::vector<ShardedStateDict>&)>;

// The save, restart and resume of the resharding properties (P3, P8, P9, P10, P12): on a fresh
// target of `factory`, the framework's dicts of `states` (a run of `saved_run`; `inspect`, when
// set, sees them), a synchronous save at the states' iteration, Finalize, a new process, then the
// resume of `run` under `flags`; beside it, the spec's ExpectedResume of the same. Returns an error
// only when the framework, `inspect`, the save or the finalize fails; the resume's verdicts are in
// *out.
Status SaveRestartResume(const TargetFactory& factory, const RunSpec& saved_run,
                         const std::vector<TrainingState>& states, const RunSpec& run,
                         const LoadFlags& flags, RestartedResume* out,
                         const SaveDictsCheck& inspect = nullptr);

}  // namespace ckptspec
