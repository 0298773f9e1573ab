// B18 gas-skip-count. Upstream: https://github.com/huggingface/transformers/pull/8624 (#5605).
//
// Mechanism: the Trainer computed the batches to skip on resume in optimizer steps and never
// multiplied by gradient_accumulation_steps, so it skipped steps micro-batches instead of
// steps x gas and resumed at the wrong sample. The mutant: FromStateDicts applies the load rules
// (L9 resumes at consumed_samples = iterations x global_batch_size) and then repositions the
// iterator at consumed_samples / GradAccumSteps -- one micro-batch set per step. Silent; only with
// gradient accumulation (global_batch_size > micro_batch_size x dp_size) and k > 0.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B18Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint&, std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) {
      s.data.consumed_samples /= GradAccumSteps(s.config.data);  // skip count not multiplied by gas
      s.data.epoch = s.data.consumed_samples / s.config.data.num_samples;
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
