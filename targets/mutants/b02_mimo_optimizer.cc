// B02 mimo-optimizer. Upstream: https://github.com/NVIDIA/Megatron-LM/pull/4801 (and /pull/4791,
// /pull/4790).
//
// Mechanism (defect iii of the three): in non-colocated MIMO, _get_replica_id returned
// (0, pp, dp) for the per-module optimizer object, so every TP rank of a module claimed to be the
// main replica and the checkpoint got duplicate "param_groups/shard_0_1" keys. The mutant:
// ToStateDicts gives each named module's optimizer common object ("optimizer.mimo.{module}.
// common_state") the replica id (pp, 0, dp_cp), i.e. the TP slot ignores tp_rank. With TP > 1
// every TP rank writes the same object: the reference's save validation refuses the duplicate
// (loud); without validation the checkpoint holds several "main" copies.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B02Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_save = [](const std::vector<TrainingState>&,
                        std::vector<ShardedStateDict>* every_rank) {
    for (ShardedStateDict& d : *every_rank) {
      for (ShardedObject& o : d.objects) {
        const std::string& k = o.spec.key;
        const bool module_common = k.rfind("optimizer.mimo.", 0) == 0 && k.size() >= 12 &&
                                   k.compare(k.size() - 12, 12, "common_state") == 0;
        if (module_common && o.spec.replica_id.size() == 3) o.spec.replica_id[1] = 0;
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
