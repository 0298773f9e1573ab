// The param groups a checkpoint saved for one module, as a mutant's framework layer reads them
// back to re-apply a buggy load step over the canonical load (B05, B21).
#pragma once

#include <functional>
#include <vector>

#include "model/status.h"
#include "model/training_state.h"
#include "targets/target.h"

namespace ckptspec {

// The sub-optimizers (with their groups, in saved order) that `load` holds for module `module`:
// the run's common state's "optimizer" for a single-module run, else the module's
// "optimizer.common" object on the module's first rank. *found is false (and OK returned) when
// the checkpoint holds none for the module. Errors: the saved groups do not parse (Corruption).
Status SavedSubOptimizers(const LoadedCheckpoint& load, size_t module,
                          std::vector<SubOptimizer>* out, bool* found);

// Calls visit(state, current, saved) for every loaded module's state and every current
// sub-optimizer with a saved one of the same name (SavedSubOptimizers); stops at the first error
// of visit or of reading the saved groups, and returns it.
Status ForEachSavedSubOptimizer(
    const LoadedCheckpoint& load, std::vector<TrainingState>* states,
    const std::function<Status(TrainingState&, SubOptimizer&, const SubOptimizer&)>& visit);

// The load rules' match (L3) of `saved`'s groups to `current`'s: true and
// (*saved_for_current)[c] the saved group of current group c, or false where they do not match.
bool MatchSavedGroups(const SubOptimizer& saved, const SubOptimizer& current,
                      std::vector<int>* saved_for_current);

}  // namespace ckptspec
