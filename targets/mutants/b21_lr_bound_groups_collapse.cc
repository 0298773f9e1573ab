// B21 lr-bound-groups-collapse. Upstream: https://github.com/NVIDIA/Megatron-LM/pull/4705.
//
// Mechanism: megatron-core v0.19 builds param groups from per-parameter overrides
// (ParamGroupOverride), so two groups may differ only in max_lr / min_lr. The load matched saved
// groups to current ones by param_group_identifier_keys, which did not yet hold the bounds:
// make_needed_groups puts the saved groups into a dict keyed by that tuple, so the groups collapse
// into the last saved one, and each current group becomes {**that group, params: current} -- the
// other region's bounds, lr and step. The fix adds max_lr / min_lr to the identifier keys.
// The mutant: FromStateDicts applies the load rules and then, with the optimizer loaded, re-does
// the group match over the checkpoint's groups with the older key (wd_mult, lr_mult,
// is_expert_parallel, is_decoupled_lr) and dict semantics (the last saved group with a key wins),
// merges that group into each current one as the load rules do (L3: the current identity, the
// saved LR bounds, hyper-parameters and step; L6: under override_scheduler the new config's
// bounds), and recomputes lr from the scheduler. Silent; only when a sub-optimizer saved two groups that differ only in LR bounds.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <map>

#include "model/scheduler.h"
#include "targets/mutants/framework_edits.h"
#include "targets/mutants/saved_param_groups.h"

namespace ckptspec {

ReplacedParts B21Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint& load, std::vector<TrainingState>* states) {
    if (load.flags.finetune || load.flags.no_load_optim) return Status::OK();
    return ForEachSavedSubOptimizer(
        load, states, [&](TrainingState& s, SubOptimizer& sub, const SubOptimizer& old) -> Status {
          std::map<ParamGroupKey, const ParamGroup*> by_key;  // param_groups_map
          for (const ParamGroup& g : old.groups) {
            ParamGroupKey key;
            CKPTSPEC_RETURN_IF_ERROR(
                IdentityKey(g.identity, IdentityKeySet::kCore, "saved param group", &key));
            by_key[key] = &g;  // a later group with the same key replaces an earlier one
          }
          for (ParamGroup& g : sub.groups) {
            ParamGroupKey key;
            CKPTSPEC_RETURN_IF_ERROR(
                IdentityKey(g.identity, IdentityKeySet::kCore, "current param group", &key));
            auto it = by_key.find(key);
            if (it == by_key.end()) {
              return Status::NotFound("no saved param group with key " + DescribeKey(key));
            }
            // The load rules' merge (L3, L6), only with the wrong saved group.
            ParamGroupIdentity identity = g.identity;
            if (!load.flags.override_scheduler) {
              identity.max_lr = it->second->identity.max_lr;
              identity.min_lr = it->second->identity.min_lr;
            }
            std::vector<int> params = std::move(g.params);
            g = *it->second;
            g.identity = identity;
            g.params = std::move(params);
          }
          ApplySchedule(s.scheduler, &sub.groups);
          return Status::OK();
        });
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
