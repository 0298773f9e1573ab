// B32 export-drops-frozen. Upstream: https://github.com/deepspeedai/DeepSpeed/pull/3205 (merged;
// it added the frozen parameters to zero_to_fp32.py's output, as its description's pending task
// "Update zero_to_fp32.py to recover frozen weights" asked), and
// https://github.com/deepspeedai/DeepSpeed/issues/3090 (the checkpoint side of the same gap).
//
// Mechanism: DeepSpeed's zero_to_fp32.py consolidates a sharded ZeRO checkpoint into one state
// dict offline. It rebuilt the parameters from the optimizer's fp32 flat groups (plus the buffers
// and the names tied to a rebuilt parameter), and the optimizer only ever holds the trainable
// parameters: a frozen parameter (requires_grad=False when the engine was built: a frozen base
// under LoRA, a frozen embedding) has no optimizer state, so the consolidated file had no entry
// for it, with no error. Loading that file under another layout left those weights at whatever
// the new model was initialised with, or failed on the missing key.
// The mutant: the export (targets/reference/checkpoint_export.h, its ExportsTensor step) keeps a
// model tensor only when the checkpoint holds its per-parameter optimizer state
// (`state.exp_avg.<key>`); the optimizer's tensors and every object are exported as they are. A
// checkpoint without per-parameter optimizer state (dp_reshardable buffers) is exported whole.
// Under the megatron freezing family a frozen parameter has no state, so it is left out; under
// torch.optim's, a parameter never stepped is left out too (it has no state yet either). The
// import saves what is left, and the resume from it fails on the missing key where the spec
// loads the frozen weights (row L1). S->L.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <memory>
#include <string>

namespace ckptspec {
namespace {

constexpr const char kMomentPrefix[] = "state.exp_avg.";

// An entry of the optimizer: "optimizer..." or "chained_<i>.optimizer...".
bool IsOptimizerKey(const std::string& key) {
  return key.rfind("optimizer.", 0) == 0 ||
         (key.rfind("chained_", 0) == 0 && key.find(".optimizer.") != std::string::npos);
}

class OptimizerParamsExport : public ReferenceExport {
 public:
  using ReferenceExport::ReferenceExport;

 protected:
  bool ExportsTensor(const CheckpointMetadata& checkpoint,
                     const TensorEntry& tensor) const override {
    if (IsOptimizerKey(tensor.key)) return true;
    bool per_parameter_state = false;
    for (const TensorEntry& t : checkpoint.tensors) {
      const size_t at = t.key.find(kMomentPrefix);
      if (at == std::string::npos || !IsOptimizerKey(t.key)) continue;
      per_parameter_state = true;
      if (t.key.compare(at + sizeof(kMomentPrefix) - 1, std::string::npos, tensor.key) == 0) {
        return true;  // rebuilt from the optimizer's copy of it
      }
    }
    return !per_parameter_state;
  }
};

}  // namespace

ReplacedParts B32Parts(int /*process*/) {
  ReplacedParts parts;
  parts.checkpoint_export = [](ReferenceEngine* engine) -> std::unique_ptr<ReferenceExport> {
    return std::make_unique<OptimizerParamsExport>(engine);
  };
  return parts;
}

}  // namespace ckptspec
