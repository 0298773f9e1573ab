#include "harness/rerun_fault.h"

#include <limits>

namespace ckptspec {

bool CanRerunFault(const TrainingState& s) {
  return s.rerun.mode == RerunMode::kValidateResults &&
         s.rerun.state == RerunState::kNotRunningYet && s.rerun.first_iteration_complete;
}

Status RerunFaultStep(TrainingState* s) {
  if (!CanRerunFault(*s)) {
    return Status::FailedPrecondition(std::string("no fault transition from mode ") +
                                      RerunModeName(s->rerun.mode) + ", state " +
                                      RerunStateName(s->rerun.state));
  }
  RerunContext ctx{s->rng.empty() ? nullptr : &s->rng[0], &s->data};
  const std::vector<RankRngState> rng_at_start = s->rng;
  const uint64_t draws = static_cast<uint64_t>(GradAccumSteps(s->config.data));
  ValidationInput nan;
  nan.result = std::numeric_limits<double>::quiet_NaN();
  nan.rejected = true;
  nan.fatal = true;
  bool run = false;
  int passes = 0;
  for (;;) {
    CKPTSPEC_RETURN_IF_ERROR(ShouldRunForwardBackward(&s->rerun, ctx, &run));
    if (!run) break;
    if (++passes > 2) return Status::FailedPrecondition("the fault keeps the machine rerunning");
    for (size_t r = 1; r < s->rng.size(); ++r) s->rng[r] = rng_at_start[r];
    for (RankRngState& r : s->rng) AdvanceAll(&r, draws);
    CKPTSPEC_RETURN_IF_ERROR(ValidateResult(&s->rerun, "loss", 0, nan));
  }
  // The machine restored rank 0's snapshot; the other ranks restore theirs.
  for (size_t r = 1; r < s->rng.size(); ++r) s->rng[r] = rng_at_start[r];
  const CheckpointAndExit exit = ShouldCheckpointAndExit(&s->rerun);
  if (!(exit == CheckpointAndExit{true, true, kExitCodeResumeToDisambiguate}) ||
      s->rerun.state != RerunState::kWillRerunFromCheckpoint) {
    return Status::FailedPrecondition(std::string("the fault ended in state ") +
                                      RerunStateName(s->rerun.state) +
                                      ", not a checkpoint-and-exit");
  }
  return Status::OK();
}

}  // namespace ckptspec
