// B31 precision-switch-optim-reset. Upstream: https://github.com/facebookresearch/ParlAI/pull/1772
// (a reattempt of https://github.com/facebookresearch/ParlAI/pull/1771).
//
// Mechanism: ParlAI's TorchAgent wrapped the optimizer in an fp16 optimizer (apex's, with its
// loss scaler and fp32 master weights) when training in fp16, and saved the wrapped state dict.
// A run resumed in the other precision (fp16 <-> fp32) handed that state dict to an optimizer of
// the other shape, which did not take it, and training went on from a fresh optimizer: "switching
// between modes would cause the optimizer to be reset to a fresh state and forgetting all of the
// moments previously stored" (the PR's description; the fix converts between the two state dicts
// instead). The mutant: after the canonical load with the
// optimizer loaded, every module whose checkpoint saved its weights in another dtype than the
// run's (the common state's params_dtype, load rule L1) gets a fresh optimizer over the loaded
// weights: moments zero (under the torch_optim freezing family: no state at all), per-parameter
// and per-group steps 0, the fp32 main and offload copies rebuilt from the model weights. The
// scheduler and the groups' hyper-parameters stay as loaded. Silent; visible once the saved run
// has trained (k > 0) and the resume changes the params dtype with the optimizer loaded (P3's
// and P20's precision changes).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B31Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint& load, std::vector<TrainingState>* states) {
    if (load.flags.finetune || load.flags.no_load_optim) return Status::OK();
    for (size_t m = 0; m < states->size() && m < load.saved.params_dtype.size(); ++m) {
      TrainingState& s = (*states)[m];
      const std::optional<DType>& saved = load.saved.params_dtype[m];
      if (!saved || *saved == s.config.model.params_dtype) continue;
      const bool lazy = s.config.optimizer.freeze_family == FreezeFamily::kTorchOptim;
      for (ParamState& p : s.params) {
        if (!HasOptimizerState(p)) continue;
        p.step = 0;
        if (lazy) {  // a fresh torch.optim optimizer holds no state before its first step
          p.exp_avg.clear();
          p.exp_avg_sq.clear();
          p.main.clear();
          p.offload.clear();
          continue;
        }
        p.exp_avg.assign(p.exp_avg.size(), 0.0f);
        p.exp_avg_sq.assign(p.exp_avg_sq.size(), 0.0f);
      }
      RefreshMastersFromModel(&s);
      for (SubOptimizer& sub : s.optimizers) {
        for (ParamGroup& g : sub.groups) g.step = 0;
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
