// The param groups a checkpoint saved, as a framework layer reads them back from a load to apply
// a step of its own over the canonical rebuild (the catalog's B05, B21 and B22 re-apply a buggy
// one; a plugin's framework may use them the same way: docs/PLUGINS.md, "Reading the saved param
// groups").
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

// The load rules' match (L3, MatchSavedParamGroups) of `saved`'s groups to `current`'s, a
// sub-optimizer of `state` (the loaded state: its parameters' frozen flags and freezing family
// decide which saved groups are dropped first): true and (*saved_for_current)[c] the index in
// saved.groups of current group c's saved group, or false where they do not match.
bool MatchSavedGroups(const TrainingState& state, const SubOptimizer& saved,
                      const SubOptimizer& current, std::vector<int>* saved_for_current);

}  // namespace ckptspec
