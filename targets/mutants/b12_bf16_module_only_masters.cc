// B12 bf16-module-only-masters. Upstream: https://github.com/deepspeedai/DeepSpeed/pull/4141.
//
// Mechanism: after load_module_only=True, DeepSpeed called refresh_fp32_params() only when
// fp16_enabled(), so bf16 runs kept their random-init fp32 masters and the first step jumped.
// The mutant: FromStateDicts applies the load rules (L4 refreshes every master copy from the
// loaded weights after a load without optimizer state) and, for a bf16 model, puts the main and
// offload copies back to their initial values: the refresh ran for fp16 only. Silent.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B12Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint& load, std::vector<TrainingState>* states) {
    if (!load.flags.finetune && !load.flags.no_load_optim) return Status::OK();  // L4 did not run
    for (TrainingState& s : *states) {
      if (s.config.model.params_dtype != DType::kBFloat16) continue;  // if fp16_enabled(): refresh
      TrainingState init;
      CKPTSPEC_RETURN_IF_ERROR(InitialTrainingState(s.config, &init));
      for (size_t p = 0; p < s.params.size(); ++p) {
        s.params[p].main = init.params[p].main;
        s.params[p].offload = init.params[p].offload;
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
