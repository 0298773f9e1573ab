// B13 z0-bf16-optim-lost. Upstream: https://github.com/deepspeedai/DeepSpeed/pull/7786 (cf. #7571).
//
// Mechanism: for bf16 + ZeRO stage 0 a wrong config flag skipped saving and loading the
// optimizer state: step, exp_avg and exp_avg_sq came back fresh although the checkpoint was
// meant to hold them. The mutant: FromStateDicts applies the load rules and, for a bf16 model,
// drops what L3 loaded of the optimizer state: Adam moments, per-parameter and per-group step
// counters go back to their initial values (masters and scheduler stay). fp32 and fp16 runs are
// unaffected. Silent.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B13Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint&, std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) {
      if (s.config.model.params_dtype != DType::kBFloat16) continue;
      TrainingState init;
      CKPTSPEC_RETURN_IF_ERROR(InitialTrainingState(s.config, &init));
      for (size_t p = 0; p < s.params.size(); ++p) {
        s.params[p].exp_avg = init.params[p].exp_avg;
        s.params[p].exp_avg_sq = init.params[p].exp_avg_sq;
        s.params[p].step = 0;
      }
      for (SubOptimizer& sub : s.optimizers) {
        for (ParamGroup& g : sub.groups) g.step = 0;
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
