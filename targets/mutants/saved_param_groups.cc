#include "targets/mutants/saved_param_groups.h"

#include <nlohmann/json.hpp>

#include "model/state_common.h"

namespace ckptspec {

Status SavedSubOptimizers(const LoadedCheckpoint& load, size_t module,
                          std::vector<SubOptimizer>* out, bool* found) {
  *found = false;
  if (load.loaded.empty()) return Status::OK();
  const nlohmann::json* saved_json = nullptr;
  nlohmann::json module_common;
  if (load.loaded[0].common->contains("optimizer")) {
    saved_json = &load.loaded[0].common->at("optimizer");
  } else {  // named modules: the module's common object, on the module's first rank
    const ShardedStateDict& d = load.loaded[load.layout.modules()[module].first_rank];
    for (const ShardedObject& o : d.objects) {
      if (o.spec.origin.find("optimizer.common") != std::string::npos && !o.data.empty()) {
        module_common = nlohmann::json::parse(o.data, nullptr, false);
        if (module_common.is_object() && module_common.contains("optimizer")) {
          saved_json = &module_common["optimizer"];
        }
      }
    }
  }
  if (!saved_json) return Status::OK();
  CKPTSPEC_RETURN_IF_ERROR(SubOptimizersFromJson(*saved_json, out));
  *found = true;
  return Status::OK();
}

Status ForEachSavedSubOptimizer(
    const LoadedCheckpoint& load, std::vector<TrainingState>* states,
    const std::function<Status(TrainingState&, SubOptimizer&, const SubOptimizer&)>& visit) {
  for (size_t m = 0; m < states->size(); ++m) {
    std::vector<SubOptimizer> saved;
    bool found = false;
    CKPTSPEC_RETURN_IF_ERROR(SavedSubOptimizers(load, m, &saved, &found));
    if (!found) continue;
    TrainingState& state = (*states)[m];
    for (SubOptimizer& current : state.optimizers) {
      for (const SubOptimizer& old : saved) {
        if (old.name == current.name) CKPTSPEC_RETURN_IF_ERROR(visit(state, current, old));
      }
    }
  }
  return Status::OK();
}

bool MatchSavedGroups(const TrainingState& state, const SubOptimizer& saved,
                      const SubOptimizer& current, std::vector<int>* saved_for_current) {
  std::vector<bool> frozen_now;
  for (const ParamState& p : state.params) frozen_now.push_back(p.frozen);
  IdentityKeySet key_set = IdentityKeySet::kWithLrBounds;
  return MatchSavedParamGroups(saved.groups, current.groups, frozen_now,
                               state.config.optimizer.freeze_family == FreezeFamily::kTorchOptim,
                               saved_for_current, &key_set)
      .ok();
}

}  // namespace ckptspec
