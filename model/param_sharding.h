// The canonical sharding of model parameters under a layout: the spec's own framework layer for
// parameters, following Megatron-core's conventions (docs/SEMANTICS.md §2).
//
//  - Keys: ModelParameters()'s checkpoint keys; in a heterogeneous layout each module's keys carry
//    its name as prefix ("vision.decoder.layers...").
//  - Prepended axes: homogeneous layers stack along a leading layer axis (offset = global layer
//    index); experts along an expert axis (offset = global expert index). Their local extent is 1.
//  - TP: a parameter with tp_axis >= 0 is split into equal chunks along that axis by TP (by
//    expert-TP for expert parameters); a replicated parameter covers the whole axis.
//  - Placement: the word embedding on the first pipeline stage; final norm and untied output
//    layer on the last; layer parameters on the stage that owns the layer; experts on the EP rank
//    that owns them (num_experts / ep consecutive experts per EP rank).
//  - Replica ids (pp-copy, tp, dp):
//      TP-split dense parameter          (0, 0, dp_cp_rank)
//      replicated dense parameter        (0, tp_rank, dp_cp_rank)
//      TP-split expert parameter         (0, 0, expert_dp_rank)
//      tied embedding on the last stage  (1, 0, dp_cp_rank)   [pp > 1 only]
//  - Regular grid: axis_fragmentations = (num_layers | num_experts for prepended axes, tp size on
//    the split axis, 1 elsewhere).
//  - origin = "{module}:param" (module "model" when unnamed), so distinct modules' or state
//    classes' entries can never silently share a key (P5).
//  - Content: an element's value is ContentElementBits(params_dtype, seed, KeyHash(key), global
//    index in the stacked tensor), so every chunk of a key is a slice of one global tensor and
//    any layout change reads back the same values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/layout.h"
#include "model/model_config.h"
#include "model/sharded.h"
#include "model/status.h"

namespace ckptspec {

class ParameterSharding {
 public:
  // Validates every module's model against its layout (ValidateModelForLayout) and that
  // models[i].name equals layout.modules()[i].name. Errors name the module.
  static Status Make(const HeterogeneousLayout& layout, const std::vector<ModelConfig>& models,
                     ParameterSharding* out);
  // Convenience: one unnamed module.
  static Status Make(const Layout& layout, const ModelConfig& model, ParameterSharding* out);

  const HeterogeneousLayout& layout() const { return layout_; }
  const std::vector<ModelConfig>& models() const { return models_; }
  int64_t world_size() const { return layout_.world_size(); }

  // The parameter entries of `rank` (no data), in ModelParameters() order.
  std::vector<TensorSpec> RankTensors(int64_t rank) const;
  // RankTensors as a signature (no common state).
  RankSignature RankSignatureOf(int64_t rank) const;
  // Every rank's signature.
  GlobalSignature Signature() const;
  // `rank`'s parameter state dict with content from the generator under `seed`.
  ShardedStateDict RankStateDict(int64_t rank, uint64_t seed) const;

 private:
  struct Module {
    std::vector<ParameterSpec> params;
    PipelineStages stages;
  };
  void AppendModuleTensors(int module_index, int64_t local_rank,
                           std::vector<TensorSpec>* out) const;

  HeterogeneousLayout layout_;
  std::vector<ModelConfig> models_;
  std::vector<Module> modules_;
};

}  // namespace ckptspec
