// B11 rng-reseeded-after-load. Upstream: https://github.com/modelscope/ms-swift/pull/9935.
//
// Mechanism: GRPO/GKD resampling init called set_random_seed(seed + 1) and then
// set_random_seed(seed) AFTER the trainer had restored the RNG from the checkpoint, so the
// restored state was overwritten by a fresh seeding. The mutant: FromStateDicts applies the load
// rules (L7 restores each rank's RNG) and then reseeds every rank exactly as a fresh run does
// (InitialRankRng with the config's seed and the rank's coordinates). Silent; visible once the
// saved run had drawn from its streams (k > 0).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/b11_rng_reseeded_after_load.h"

namespace ckptspec {
namespace {

class ReseedingFramework : public CanonicalFramework {
 public:
  Status FromStateDicts(const LoadedCheckpoint& load,
                        std::vector<TrainingState>* states) const override {
    CKPTSPEC_RETURN_IF_ERROR(CanonicalFramework::FromStateDicts(load, states));
    for (TrainingState& s : *states) {
      for (size_t r = 0; r < s.rng.size() && r < s.config.ranks.size(); ++r) {
        s.rng[r] =
            InitialRankRng(s.config.seed, s.config.ranks[r], s.config.data_parallel_random_init);
      }
    }
    return Status::OK();
  }
};

}  // namespace

ReplacedParts B11Parts(int /*process*/) {
  ReplacedParts parts;
  parts.framework = std::make_unique<ReseedingFramework>();
  return parts;
}

}  // namespace ckptspec
