// B08 expert-amax-offset. Upstream: https://github.com/NVIDIA/Model-Optimizer/issues/2209.
//
// Mechanism: the per-expert scalar weight_quantizer._amax of TEGroupedMLP was registered with
// global_shape (1,) and no expert axis, so every expert mapped to the same global offset; sharding
// validation rejects it on a topology change ("Invalid sharding pattern"). The canonical sharding's
// per-expert scalar is the per-parameter step counter of an expert weight (prepended axes + (1,)).
// The mutant: ToStateDicts drops the expert axis from those entries (global shape, offset and
// fragmentation), so all experts of a layer claim the same element of "...state.step.{key}".
// The reference's save validation refuses the overlap (loud).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B08Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_save = [](const std::vector<TrainingState>&,
                        std::vector<ShardedStateDict>* every_rank) {
    for (ShardedStateDict& d : *every_rank) {
      for (ShardedTensor& t : d.tensors) {
        TensorSpec& s = t.spec;
        const bool expert_step = s.key.find("state.step.") != std::string::npos &&
                                 s.key.find("experts") != std::string::npos &&
                                 s.prepend_axis_num > 0;
        if (!expert_step) continue;
        const size_t axis = static_cast<size_t>(s.prepend_axis_num - 1);  // the expert axis is last
        s.global_shape.erase(s.global_shape.begin() + axis);
        s.global_offset.erase(s.global_offset.begin() + axis);
        if (s.axis_fragmentations.size() > axis) {
          s.axis_fragmentations.erase(s.axis_fragmentations.begin() + axis);
        }
        --s.prepend_axis_num;
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
