// B26 per-rank-skip-rescaled. Of this catalog's own design, for the global sampler's resume under
// another DP size (model/data_iterator.h, load rule L9). Related upstream report:
// https://github.com/huggingface/transformers/issues/22580 (a run resumed on three times the GPUs
// kept its step count while every step now held three times the samples).
//
// Mechanism: a loop that resumes by skipping batches on every rank counts what to skip per rank
// (the samples one rank had drawn: consumed_samples / saved DP size) and lets every new rank skip
// that many, so the run's global position becomes that count times the NEW DP size. Under the
// saved DP size that is consumed_samples again; under another it skips ahead (a larger DP size)
// or replays (a smaller one). The mutant: after the canonical load, a module whose global sampler
// was loaded under another DP size gets consumed_samples = saved consumed_samples / saved DP size
// * new DP size, and the epoch that goes with it. Silent; visible to a property that resumes the
// global sampler under another DP size and compares the samples drawn next.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "model/load_semantics.h"
#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B26Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint& load, std::vector<TrainingState>* states) {
    const std::vector<ModuleLayout>& now = load.layout.modules();
    const std::vector<ModuleLayout>& was = load.saved.layout.modules();
    for (size_t m = 0; m < states->size() && m < was.size(); ++m) {
      TrainingState& s = (*states)[m];
      const int64_t saved_dp = was[m].layout.dp();
      const int64_t new_dp = now[m].layout.dp();
      if (saved_dp == new_dp || s.config.data.sampler != DataSampler::kGlobal ||
          !StateClassesToLoad(load.flags, s.config, was[m].layout, now[m].layout).data) {
        continue;
      }
      s.data.consumed_samples = s.data.consumed_samples / saved_dp * new_dp;
      s.data.epoch = s.data.consumed_samples / s.config.data.num_samples;
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
