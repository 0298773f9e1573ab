// B17 rng-state-all. Upstream: https://github.com/huggingface/transformers/pull/23045.
//
// Mechanism: the Trainer saved torch.cuda.get_rng_state_all() (every device) but loaded with
// torch.cuda.set_rng_state(), which sets only the current device: the other GPUs kept their
// fresh seeding. The mutant: FromStateDicts applies the load rules (L7 restores every rank) and
// then, for every rank but the first of each module (the "current device"), puts the CUDA state
// -- the "cuda" stream and the CUDA RNG tracker states -- back to its fresh seeding; CPU streams
// stay restored. Silent; needs more than one rank and draws before the save.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B17Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint&, std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) {
      for (size_t r = 1; r < s.rng.size() && r < s.config.ranks.size(); ++r) {
        const RankRngState fresh =
            InitialRankRng(s.config.seed, s.config.ranks[r], s.config.data_parallel_random_init);
        s.rng[r].streams["cuda"] = fresh.streams.at("cuda");
        s.rng[r].trackers = fresh.trackers;
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
