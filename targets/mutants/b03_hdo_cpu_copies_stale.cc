// B03 hdo-cpu-copies-stale. Upstream: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/3949,
// https://github.com/NVIDIA/Megatron-LM/pull/5071.
//
// Mechanism: after a model-only load, reload_model_params() refreshes the distributed
// optimizer's fp32 main copies, but HybridDeviceOptimizer's per-parameter CPU copies (which its
// CPU sub-optimizers step against, and then copy back into the model) stay at their random init.
// The first step() erases the loaded weights. The mutant: FromStateDicts applies the load rules
// (L4 refreshes main and offload copies from the loaded weights), then puts every offload copy
// back to its initial value -- exactly the copies Megatron forgot. Silent; only runs with
// cpu_offload_fraction > 0 and a load without optimizer state (finetune / no_load_optim).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B03Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_rebuild = [](const LoadedCheckpoint& load, std::vector<TrainingState>* states) {
    if (!load.flags.finetune && !load.flags.no_load_optim) return Status::OK();  // L4 did not run
    for (TrainingState& s : *states) {
      TrainingState init;
      CKPTSPEC_RETURN_IF_ERROR(InitialTrainingState(s.config, &init));
      for (size_t p = 0; p < s.params.size(); ++p) {
        if (s.params[p].offloaded) s.params[p].offload = init.params[p].offload;
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
