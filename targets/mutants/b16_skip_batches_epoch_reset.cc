// B16 skip-batches-epoch-reset. Upstream: https://github.com/huggingface/accelerate/pull/4071.
//
// Mechanism: skip_first_batches() builds a DataLoaderShard with iteration=0 whose __iter__ calls
// set_epoch(0): the resumed loader skips the right number of batches, but of the EPOCH-0
// permutation. The mutant: FromStateDicts applies the load rules (L9 resumes the iterator at the
// saved consumed_samples) and then resets the sampler epoch to 0 while keeping the position inside
// the epoch: consumed_samples becomes consumed_samples mod num_samples, epoch 0. Silent; only a
// resume after the first epoch boundary (with shuffling) differs.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B16Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint&, std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) {
      const int64_t n = s.config.data.num_samples;
      s.data.consumed_samples %= n;  // the in-epoch position is kept ...
      s.data.epoch = 0;              // ... of the epoch-0 permutation: set_epoch(0)
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
