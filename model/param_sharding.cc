#include "model/param_sharding.h"

#include "model/content.h"
#include "model/content_fill.h"

namespace ckptspec {

Status ParameterSharding::Make(const HeterogeneousLayout& layout,
                               const std::vector<ModelConfig>& models, ParameterSharding* out) {
  if (models.size() != layout.modules().size()) {
    return Status::InvalidArgument(std::to_string(models.size()) + " model configs for " +
                                   std::to_string(layout.modules().size()) + " layout modules");
  }
  ParameterSharding sharding;
  sharding.layout_ = layout;
  sharding.models_ = models;
  for (size_t i = 0; i < models.size(); ++i) {
    const ModuleLayout& module = layout.modules()[i];
    const std::string label = "module '" + module.name + "'";
    if (models[i].name != module.name) {
      return Status::InvalidArgument(label + ": model config is named '" + models[i].name + "'");
    }
    CKPTSPEC_RETURN_IF_ERROR(ValidateModelForLayout(models[i], module.layout).WithContext(label));
    Module m;
    m.params = ModelParameters(models[i]);
    CKPTSPEC_RETURN_IF_ERROR(PipelineStages::Make(models[i], module.layout.pp(), &m.stages));
    sharding.modules_.push_back(std::move(m));
  }
  *out = std::move(sharding);
  return Status::OK();
}

Status ParameterSharding::Make(const Layout& layout, const ModelConfig& model,
                               ParameterSharding* out) {
  return Make(HeterogeneousLayout::Single(layout, model.name), {model}, out);
}

void ParameterSharding::AppendModuleTensors(int module_index, int64_t local_rank,
                                            std::vector<TensorSpec>* out) const {
  const Layout& layout = layout_.modules()[module_index].layout;
  const ModelConfig& model = models_[module_index];
  const Module& module = modules_[module_index];
  const RankCoords coords = layout.Coords(local_rank);
  const int64_t last_stage = layout.pp() - 1;
  const int64_t experts_per_rank = model.num_experts > 0 ? model.num_experts / layout.ep() : 0;
  const std::string origin = (model.name.empty() ? std::string("model") : model.name) + ":param";

  for (const ParameterSpec& p : module.params) {
    bool tied_copy = false;
    switch (p.placement) {
      case ParamPlacement::kEmbedding:
        if (coords.pp == 0) break;
        if (model.tie_embeddings && coords.pp == last_stage) {
          tied_copy = true;
          break;
        }
        continue;
      case ParamPlacement::kOutput:
        if (coords.pp != last_stage) continue;
        break;
      case ParamPlacement::kLayer:
        if (module.stages.StageOfLayer(p.layer) != coords.pp) continue;
        if (p.is_expert() && p.expert / experts_per_rank != coords.ep) continue;
        break;
    }
    // Layer params are stacked only under a prepended layer axis; with one expert axis more.
    const bool layer_axis = p.prepend_axis_num > (p.is_expert() ? 1 : 0);
    const int64_t tp_size = p.is_expert() ? layout.etp() : layout.tp();
    const int64_t tp_rank = p.is_expert() ? coords.etp : coords.tp;

    TensorSpec t;
    t.key = p.key;
    t.dtype = model.params_dtype;
    t.prepend_axis_num = p.prepend_axis_num;
    t.origin = origin;
    if (layer_axis) {
      t.global_shape.push_back(model.num_layers);
      t.global_offset.push_back(p.layer);
      t.axis_fragmentations.push_back(model.num_layers);
    }
    if (p.is_expert()) {
      t.global_shape.push_back(model.num_experts);
      t.global_offset.push_back(p.expert);
      t.axis_fragmentations.push_back(model.num_experts);
    }
    for (size_t a = 0; a < p.shape.size(); ++a) {
      const bool split = static_cast<int>(a) == p.tp_axis;
      const int64_t local = split ? p.shape[a] / tp_size : p.shape[a];
      t.global_shape.push_back(p.shape[a]);
      t.local_shape.push_back(local);
      t.global_offset.push_back(split ? tp_rank * local : 0);
      t.axis_fragmentations.push_back(split ? tp_size : 1);
    }
    if (tied_copy) {
      t.replica_id = {1, 0, coords.dp_cp};
    } else if (p.is_expert()) {
      t.replica_id = {0, p.tp_axis >= 0 ? 0 : coords.etp, coords.edp};
    } else {
      t.replica_id = {0, p.tp_axis >= 0 ? 0 : coords.tp, coords.dp_cp};
    }
    out->push_back(std::move(t));
  }
}

std::vector<TensorSpec> ParameterSharding::RankTensors(int64_t rank) const {
  std::vector<TensorSpec> tensors;
  const int module = layout_.ModuleOf(rank);
  AppendModuleTensors(module, layout_.LocalRank(rank), &tensors);
  return tensors;
}

RankSignature ParameterSharding::RankSignatureOf(int64_t rank) const {
  RankSignature sig;
  sig.rank = rank;
  sig.tensors = RankTensors(rank);
  return sig;
}

GlobalSignature ParameterSharding::Signature() const {
  GlobalSignature global;
  global.ranks.reserve(world_size());
  for (int64_t rank = 0; rank < world_size(); ++rank) global.ranks.push_back(RankSignatureOf(rank));
  return global;
}

ShardedStateDict ParameterSharding::RankStateDict(int64_t rank, uint64_t seed) const {
  ShardedStateDict state;
  for (TensorSpec& spec : RankTensors(rank)) {
    ShardedTensor tensor;
    tensor.data.resize(static_cast<size_t>(Volume(spec.local_shape)) * DTypeSize(spec.dtype));
    FillContent(spec.dtype, seed, KeyHash(spec.key), spec.global_shape, spec.box(),
                tensor.data.data());
    tensor.spec = std::move(spec);
    state.tensors.push_back(std::move(tensor));
  }
  return state;
}

}  // namespace ckptspec
