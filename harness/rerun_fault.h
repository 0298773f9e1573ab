// A training iteration that hits a persistent fault (docs/DESIGN.md §4.3): the rerun state machine's
// path from NOT_RUNNING_YET to WILL_RERUN_FROM_CHECKPOINT, as Megatron's loop takes it when a
// validated result (the loss) is NaN on the initial run and NaN again on the in-place rerun.
//
// Contract of RerunFaultStep(s):
//  - Applies only where the spec allows the transition: mode validate_results, state
//    NOT_RUNNING_YET, and the first iteration of this process completed (ValidateResult ignores
//    rejections before that). CanRerunFault says whether it applies; otherwise FailedPrecondition.
//  - Drives the machine exactly as TrainStep's loop does: INITIAL_RUN (snapshot, RNG draws, the
//    rejected result), RERUNNING_IN_PLACE (restore, the same draws, the result reproduced: a fatal
//    match), then WILL_RERUN_FROM_CHECKPOINT (restore; the data position travels in the payload).
//  - No optimizer step, no scheduler or data-iterator advance, the iteration is unchanged; every
//    rank's RNG is back at its value from before the iteration.
//  - ShouldCheckpointAndExit then asks for (checkpoint, exit, 16); anything else is an error.
#pragma once

#include "model/status.h"
#include "model/training_state.h"

namespace ckptspec {

bool CanRerunFault(const TrainingState& s);
Status RerunFaultStep(TrainingState* s);

}  // namespace ckptspec
