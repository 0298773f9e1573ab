// B24 lazy-state-requested. Upstream: https://github.com/pytorch/torchtitan/pull/4474 (and the
// crash loop it describes, https://github.com/PrimeIntellect-ai/prime-rl/pull/2800).
//
// Mechanism: torch.optim creates a parameter's state at its first step. A save emitted the state
// of the parameters stepped so far; a resuming process initialised the state of every trainable
// parameter of its fresh optimizer before loading (a zero-gradient step), so its load requested
// state the checkpoint does not hold and failed on the missing key, at every restart. The mutant:
// under the torch.optim freezing family the load templates request optimizer state for every
// trainable parameter of the loading run beside those the checkpoint records. Visible as a
// refused resume of a checkpoint saved before some trainable parameter was stepped (at
// iteration 0, after an Unfreeze, after a Restart that unfroze a parameter).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <algorithm>

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B24Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.before_templates = [](const std::vector<TrainingConfig>& configs,
                              CheckpointInfo* materialized) {
    for (size_t m = 0; m < configs.size() && m < materialized->optimizer_state_params.size(); ++m) {
      std::optional<std::vector<int64_t>>& with_state = materialized->optimizer_state_params[m];
      if (!with_state) continue;
      TrainingState fresh;
      CKPTSPEC_RETURN_IF_ERROR(InitialTrainingState(configs[m], &fresh));
      for (size_t p = 0; p < fresh.params.size(); ++p) {
        if (!fresh.params[p].frozen) with_state->push_back(static_cast<int64_t>(p));
      }
      std::sort(with_state->begin(), with_state->end());
      with_state->erase(std::unique(with_state->begin(), with_state->end()), with_state->end());
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
