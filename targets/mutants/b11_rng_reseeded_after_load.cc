// B11 rng-reseeded-after-load. Upstream: https://github.com/modelscope/ms-swift/pull/9935.
//
// Mechanism: GRPO/GKD resampling init called set_random_seed(seed + 1) and then
// set_random_seed(seed) AFTER the trainer had restored the RNG from the checkpoint, so the
// restored state was overwritten by a fresh seeding. The mutant: FromStateDicts applies the load
// rules (L7 restores each rank's RNG) and then reseeds every rank exactly as a fresh run does
// (InitialRankRng with the config's seed and the rank's coordinates). Silent; visible once the
// saved run had drawn from its streams (k > 0).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B11Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint&, std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) {
      for (size_t r = 0; r < s.rng.size() && r < s.config.ranks.size(); ++r) {
        s.rng[r] =
            InitialRankRng(s.config.seed, s.config.ranks[r], s.config.data_parallel_random_init);
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
