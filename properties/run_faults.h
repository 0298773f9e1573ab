// Helpers the structure properties (P4-P7, P11) share: a rerun fault driven through the rerun
// state machine, and the signature of a whole save.
//
// Contracts:
//  - DriveToRerunFromCheckpoint takes every module's state through Megatron's fault path for a
//    reproducible fatal result: NOT_RUNNING_YET -> INITIAL_RUN (the result is rejected) ->
//    RERUNNING_IN_PLACE (the rerun reproduces it) -> WILL_RERUN_FROM_CHECKPOINT, where the job
//    must checkpoint and exit (code 16). Only the model's public transitions are used. The
//    states' iteration, parameters and optimizer are untouched; the RNG and data position are
//    restored by the machine as Megatron restores them. Preconditions (FailedPrecondition
//    otherwise): every module's rerun mode is validate_results and at least one iteration
//    completed since the process started.
//  - TrainedStates changes `run` only as it says (the rerun mode under a fault).
//  - RunSignature is the GlobalSignature of every rank's dict, in rank order, with common state,
//    and with digests when asked.
#pragma once

#include <vector>

#include "model/run_spec.h"
#include "model/sharded.h"
#include "model/status.h"
#include "model/training_state.h"

namespace ckptspec {

Status DriveToRerunFromCheckpoint(std::vector<TrainingState>* states);

// The states of `run` after k iterations from the start. With `fault`, every module's rerun mode
// is first set to validate_results (the only mode whose fault is checkpointed), at least one
// iteration is trained, and the states are driven to WILL_RERUN_FROM_CHECKPOINT.
Status TrainedStates(RunSpec* run, int64_t k, bool fault, std::vector<TrainingState>* states);

// Coverage labels of a run for RC_CLASSIFY: module count, optimizer format, and whether any
// module has TP, PP, DP, experts with EP > 1, expert-TP != TP, a chained optimizer.
struct RunShape {
  bool heterogeneous = false, tp = false, pp = false, dp = false, moe = false, ep = false,
       expert_tp = false, chained = false, dp_reshardable = false;
};
RunShape ShapeOf(const RunSpec& run);

GlobalSignature RunSignature(const std::vector<ShardedStateDict>& every_rank, bool with_digests);

}  // namespace ckptspec
