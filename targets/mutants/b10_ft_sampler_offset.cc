// B10 ft-sampler-offset. Upstream: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/4601.
//
// Mechanism: the fine-tuning batch sampler took consumed_samples at construction (the resume
// point) and never advanced its own copy; cyclic_iter starts a new pass of the sampler at every
// epoch end, and each pass recomputed its start from the frozen value, so every later epoch skipped
// the dataset's head and replayed the tail of the resume epoch. The mutant: FromStateDicts resumes
// the iterator by the load rules (L9) and then builds its sampler the frozen way
// (DataIteratorState::pass_origin = the resumed consumed_samples). The loaded state itself is
// right (consumed_samples, epoch and seed all equal the spec's); only the samples drawn after the
// first epoch boundary past the resume differ, and only for a mid-epoch resume.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B10Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint&, std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) s.data.pass_origin = s.data.consumed_samples;
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
