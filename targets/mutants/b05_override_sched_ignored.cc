// B05 override-sched-ignored. Upstream: https://github.com/NVIDIA/Megatron-LM/issues/1138,
// https://github.com/NVIDIA/Megatron-LM/pull/1284.
//
// Mechanism: OptimizerParamScheduler.get_lr reads param_group.get('max_lr', self.max_lr). With
// --override-opt_param-scheduler and the optimizer loaded, the groups are the checkpoint's and
// still carry its max_lr / min_lr, so the override mixes the old bounds with the new schedule.
// The mutant: FromStateDicts applies the load rules (L6: under override every group's bounds come
// from the new config) and then, under override_scheduler with the optimizer loaded, puts back
// each group's saved bounds (matched by identity) and recomputes lr from the overriding scheduler
// with them. Silent; only when the new config's LR bounds differ from the checkpoint's.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/b05_override_sched_ignored.h"

#include "model/state_common.h"

namespace ckptspec {
namespace {

class StaleGroupBoundsFramework : public CanonicalFramework {
 public:
  Status FromStateDicts(const LoadedCheckpoint& load,
                        std::vector<TrainingState>* states) const override {
    CKPTSPEC_RETURN_IF_ERROR(CanonicalFramework::FromStateDicts(load, states));
    if (!load.flags.override_scheduler || load.flags.finetune || load.flags.no_load_optim ||
        load.loaded.empty()) {
      return Status::OK();
    }
    for (size_t m = 0; m < states->size(); ++m) {
      TrainingState& s = (*states)[m];
      const nlohmann::json* saved_json = nullptr;
      nlohmann::json module_common;
      if (load.loaded[0].common.contains("optimizer")) {
        saved_json = &load.loaded[0].common["optimizer"];
      } else {  // named modules: the module's common object, on the module's first rank
        const ShardedStateDict& d = load.loaded[load.layout.modules()[m].first_rank];
        for (const ShardedObject& o : d.objects) {
          if (o.spec.origin.find("optimizer.common") != std::string::npos && !o.data.empty()) {
            module_common = nlohmann::json::parse(o.data, nullptr, false);
            if (module_common.is_object() && module_common.contains("optimizer")) {
              saved_json = &module_common["optimizer"];
            }
          }
        }
      }
      if (!saved_json) continue;
      std::vector<SubOptimizer> saved;
      CKPTSPEC_RETURN_IF_ERROR(SubOptimizersFromJson(*saved_json, &saved));
      for (SubOptimizer& sub : s.optimizers) {
        for (const SubOptimizer& old : saved) {
          if (old.name != sub.name) continue;
          std::vector<int> match;
          if (!MatchParamGroups(Identities(old.groups), Identities(sub.groups),
                                IdentityKeySet::kCore, &match)
                   .ok()) {
            continue;
          }
          for (size_t g = 0; g < sub.groups.size(); ++g) {
            sub.groups[g].identity.max_lr = old.groups[match[g]].identity.max_lr;
            sub.groups[g].identity.min_lr = old.groups[match[g]].identity.min_lr;
          }
          ApplySchedule(s.scheduler, &sub.groups);  // get_lr: param_group.get('max_lr', ...)
        }
      }
    }
    return Status::OK();
  }
};

}  // namespace

ReplacedParts B05Parts() {
  ReplacedParts parts;
  parts.framework = std::make_unique<StaleGroupBoundsFramework>();
  return parts;
}

}  // namespace ckptspec
