// B01 swift-lr-mult-pop. Upstream: https://github.com/modelscope/ms-swift/pull/9517 (fix #9524).
//
// Mechanism: ms-swift's _get_param_groups folded lr_mult into max_lr/min_lr and then popped it
// from the runtime groups. The save path (sharded_state_dict(is_loading=False)) never reads the
// identity keys, so the groups are saved without lr_mult; only the load's make_needed_groups
// needs the full identity tuple and raises "Key lr_mult ... not found in param_group".
// The mutant: ToStateDicts saves every param group without its "lr_mult" key (the canonical
// framework refuses an absent identity key on save, so the deviation is "identity is checked only
// on load"). Loud on every resume that loads the optimizer.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {
namespace {

// Removes "lr_mult" from every param group (an object with "params") under `j`.
void PopLrMult(nlohmann::json* j) {
  if (j->is_object()) {
    if (j->contains("params")) j->erase("lr_mult");
    for (auto& [key, value] : j->items()) PopLrMult(&value);
  } else if (j->is_array()) {
    for (auto& value : *j) PopLrMult(&value);
  }
}

}  // namespace

ReplacedParts B01Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_save = [](const std::vector<TrainingState>&,
                        std::vector<ShardedStateDict>* every_rank) {
    for (ShardedStateDict& d : *every_rank) {
      if (d.common->contains("optimizer")) PopLrMult(&(*d.common.Mutable())["optimizer"]);
      for (ShardedObject& o : d.objects) {  // named modules: the module's optimizer common object
        if (o.spec.origin.find("optimizer.common") == std::string::npos || o.data.empty()) continue;
        nlohmann::json j = nlohmann::json::parse(o.data);
        PopLrMult(&j);
        o.data = j.dump();
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
