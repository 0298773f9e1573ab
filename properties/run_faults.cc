#include "properties/run_faults.h"

#include <cmath>
#include <string>

#include "model/rerun_state_machine.h"

namespace ckptspec {
namespace {

Status Expect(const RerunStateMachine& m, RerunState want, const char* step) {
  if (m.state == want) return Status::OK();
  return Status::FailedPrecondition(std::string("rerun fault: after ") + step + " the machine is " +
                                    RerunStateName(m.state) + ", expected " + RerunStateName(want));
}

Status DriveOne(TrainingState* s) {
  if (s->rerun.mode != RerunMode::kValidateResults) {
    return Status::FailedPrecondition(std::string("rerun fault needs mode validate_results, not ") +
                                      RerunModeName(s->rerun.mode));
  }
  if (!s->rerun.first_iteration_complete) {
    return Status::FailedPrecondition("rerun fault needs a completed iteration first");
  }
  RerunContext ctx{s->rng.empty() ? nullptr : &s->rng[0], &s->data};
  ValidationInput nan;  // a reproducible fatal NaN loss on the same node and device
  nan.result = std::nan("");
  nan.rejected = true;
  nan.fatal = true;
  nan.node = "node-0";
  bool run = false;
  CKPTSPEC_RETURN_IF_ERROR(ShouldRunForwardBackward(&s->rerun, ctx, &run));
  CKPTSPEC_RETURN_IF_ERROR(Expect(s->rerun, RerunState::kInitialRun, "the first pass"));
  CKPTSPEC_RETURN_IF_ERROR(ValidateResult(&s->rerun, "loss", 0, nan));
  CKPTSPEC_RETURN_IF_ERROR(ShouldRunForwardBackward(&s->rerun, ctx, &run));
  CKPTSPEC_RETURN_IF_ERROR(Expect(s->rerun, RerunState::kRerunningInPlace, "the rejected result"));
  CKPTSPEC_RETURN_IF_ERROR(ValidateResult(&s->rerun, "loss", 0, nan));
  CKPTSPEC_RETURN_IF_ERROR(ShouldRunForwardBackward(&s->rerun, ctx, &run));
  CKPTSPEC_RETURN_IF_ERROR(
      Expect(s->rerun, RerunState::kWillRerunFromCheckpoint, "the reproduced result"));
  const CheckpointAndExit exit = ShouldCheckpointAndExit(&s->rerun);
  if (!exit.checkpoint || exit.exit_code != kExitCodeResumeToDisambiguate) {
    return Status::FailedPrecondition("rerun fault: the machine does not ask for a checkpoint");
  }
  return Status::OK();
}

}  // namespace

Status DriveToRerunFromCheckpoint(std::vector<TrainingState>* states) {
  for (TrainingState& s : *states) CKPTSPEC_RETURN_IF_ERROR(DriveOne(&s));
  return Status::OK();
}

Status TrainedStates(RunSpec* run, int64_t k, bool fault, std::vector<TrainingState>* states) {
  if (fault) {
    for (TrainingConfig& c : run->configs) c.rerun_mode = RerunMode::kValidateResults;
    if (k < 1) k = 1;
  }
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(*run, states));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(states, k));
  if (fault) CKPTSPEC_RETURN_IF_ERROR(DriveToRerunFromCheckpoint(states));
  return Status::OK();
}

RunShape ShapeOf(const RunSpec& run) {
  RunShape shape;
  shape.heterogeneous = run.configs.size() > 1;
  shape.dp_reshardable = run.sharding.optimizer_format == OptimizerFormat::kDpReshardable;
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const Layout& l = run.layout.modules()[i].layout;
    const TrainingConfig& c = run.configs[i];
    shape.tp |= l.tp() > 1;
    shape.pp |= l.pp() > 1;
    shape.dp |= l.dp() > 1;
    shape.moe |= c.model.num_experts > 0;
    shape.ep |= c.model.num_experts > 0 && l.ep() > 1;
    shape.expert_tp |= c.model.num_experts > 0 && l.etp() != l.tp();
    shape.chained |= c.optimizer.chaining == Chaining::kDenseExpert;
  }
  return shape;
}

GlobalSignature RunSignature(const std::vector<ShardedStateDict>& every_rank, bool with_digests) {
  GlobalSignature g;
  for (size_t r = 0; r < every_rank.size(); ++r) {
    g.ranks.push_back(SignatureOf(static_cast<int64_t>(r), every_rank[r], with_digests));
  }
  return g;
}

}  // namespace ckptspec
