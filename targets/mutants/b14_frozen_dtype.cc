// B14 frozen-dtype. Upstream: https://github.com/deepspeedai/DeepSpeed/pull/8378.
//
// Mechanism: building the "fp32" consolidated state dict, trainable fragments came from the fp32
// masters and buffers were upcast, but frozen fragments were param.detach() in the model dtype: one
// category was passed through in model dtype where fp32 was expected. In the canonical sharding
// frozen parameters have no fp32 entry at all, so the mutant applies the same pass-through to the
// category the canonical sharding does route through fp32 entries beside the trainable weights:
// the no-weight-decay parameters (wd_mult == 0: norms and biases, DeepSpeed's "buffers"). Under
// mixed precision ToStateDicts writes their "fp32_param" / bucket "param" entries from the
// model-dtype copy (upcast, so the declared dtype still holds) instead of the fp32 master: the
// saved master is the bf16/fp16-rounded value. Silent; visible once training has moved masters
// off the model-dtype grid (k > 0).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "model/float_codec.h"
#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B14Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.before_save = [](std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) {
      const DType dtype = s.config.model.params_dtype;
      if (dtype == DType::kFloat32) continue;
      for (const SubOptimizer& sub : s.optimizers) {
        for (const ParamGroup& g : sub.groups) {
          if (!g.identity.Has(IdentityField::kWdMult) || g.identity.wd_mult != 0.0) continue;
          for (int p : g.params) {
            ParamState& ps = s.params[p];
            for (size_t i = 0; i < ps.model.size(); ++i) {
              const float v = static_cast<float>(DecodeToDouble(dtype, ps.model[i]));
              if (i < ps.main.size()) ps.main[i] = v;
              if (i < ps.offload.size()) ps.offload[i] = v;
            }
          }
        }
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
