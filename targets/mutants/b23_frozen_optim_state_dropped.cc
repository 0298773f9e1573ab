// B23 frozen-optim-state-dropped. Upstream: https://github.com/pytorch/pytorch/issues/192202
// (fix proposed in https://github.com/pytorch/pytorch/pull/192307).
//
// Mechanism: torch.distributed.checkpoint's set_optimizer_state_dict picked the saved state to
// restore by the current parameters' requires_grad, so the state of a parameter trained, then
// frozen, was silently dropped on load; unfrozen later it started from fresh moments and step,
// although torch.optim keeps a frozen parameter's state. The mutant: under the torch.optim
// freezing family, after the canonical load with the optimizer loaded, every parameter frozen in
// the loading run's config loses its optimizer state. Silent; visible when a parameter that has
// state is frozen across a load (P20: Freeze after training, then Restart or Heal).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B23Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint& load, std::vector<TrainingState>* states) {
    if (load.flags.finetune || load.flags.no_load_optim) return Status::OK();
    for (TrainingState& s : *states) {
      if (s.config.optimizer.freeze_family != FreezeFamily::kTorchOptim) continue;
      for (ParamState& p : s.params) {
        if (!p.frozen) continue;
        p.main.clear();
        p.exp_avg.clear();
        p.exp_avg_sq.clear();
        p.step = 0;
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
