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
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"
#include "targets/mutants/saved_param_groups.h"

namespace ckptspec {

ReplacedParts B05Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint& load, std::vector<TrainingState>* states) {
    if (!load.flags.override_scheduler || load.flags.finetune || load.flags.no_load_optim ||
        load.loaded.empty()) {
      return Status::OK();
    }
    return ForEachSavedSubOptimizer(
        load, states, [](TrainingState& s, SubOptimizer& sub, const SubOptimizer& old) -> Status {
          std::vector<int> match;
          if (!MatchSavedGroups(s, old, sub, &match)) return Status::OK();
          for (size_t g = 0; g < sub.groups.size(); ++g) {
            sub.groups[g].identity.max_lr = old.groups[match[g]].identity.max_lr;
            sub.groups[g].identity.min_lr = old.groups[match[g]].identity.min_lr;
          }
          ApplySchedule(s.scheduler, &sub.groups);  // get_lr: param_group.get('max_lr', ...)
          return Status::OK();
        });
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
