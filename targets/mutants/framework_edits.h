// A mutant's framework layer written as edits of what the canonical framework's methods are given
// or give back (targets/target.h: CanonicalFramework), so that a mutant's source holds only its
// deviation: most mutants of the catalog change the dicts a save makes or the states a load
// rebuilds, and keep every other step the reference's.
//
// Contracts:
//  - The framework of EditedFrameworkParts(edits) is CanonicalFramework with each edit that is set
//    applied where its comment says; an edit left empty changes nothing, so no edits at all is the
//    canonical framework. The edits see the method's own arguments, never the caller's objects
//    (what they edit is a copy, or the method's output).
//  - An edit's error is the method's error, and the method stops there.
//  - The edits are called from the framework's const methods, for as long as the framework (one
//    process of a target) lives: an edit that keeps state across calls (a cache of the process)
//    holds it in its captures and guards it against concurrent calls.
#pragma once

#include <functional>
#include <vector>

#include "model/status.h"
#include "model/training_state.h"
#include "targets/reference/reference_target.h"
#include "targets/target.h"

namespace ckptspec {

struct FrameworkEdits {
  // ToStateDicts: edits a copy of the states before the canonical dicts are made of it.
  std::function<Status(std::vector<TrainingState>* states)> before_save;
  // ToStateDicts: edits every rank's canonical dicts; `states` as the method was given them.
  std::function<Status(const std::vector<TrainingState>& states,
                       std::vector<ShardedStateDict>* every_rank)>
      after_save;
  // LoadTemplates: edits a copy of the checkpoint's info before the canonical templates are made
  // of it, for the loading run's `configs`.
  std::function<Status(const std::vector<TrainingConfig>& configs, CheckpointInfo* saved)>
      before_templates;
  // LoadTemplates: edits every rank's canonical templates; `saved` as the method was given it.
  std::function<Status(const CheckpointInfo& saved, std::vector<ShardedStateDict>* every_rank)>
      after_templates;
  // FromStateDicts: edits copies of the loaded and the requested entries, which the canonical
  // rebuild then gets in place of `load`'s (the rest of `load` as it is).
  std::function<Status(const LoadedCheckpoint& load, std::vector<ShardedStateDict>* loaded,
                       std::vector<ShardedStateDict>* requested)>
      before_rebuild;
  // FromStateDicts: edits the states the canonical rebuild gave; `load` as the method was given
  // it.
  std::function<Status(const LoadedCheckpoint& load, std::vector<TrainingState>* states)>
      after_rebuild;
};

// Parts whose framework layer is the canonical one with `edits` (nothing else replaced).
ReplacedParts EditedFrameworkParts(FrameworkEdits edits);

}  // namespace ckptspec
