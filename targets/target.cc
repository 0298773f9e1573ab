#include "targets/target.h"

#include "model/param_sharding.h"

namespace ckptspec {

ShardedStateDict TemplateOf(const ShardedStateDict& state) {
  ShardedStateDict t;
  t.tensors.reserve(state.tensors.size());
  for (const ShardedTensor& tensor : state.tensors) {
    t.tensors.push_back(ShardedTensor{tensor.spec, std::vector<uint8_t>(tensor.data.size(), 0)});
  }
  for (const ShardedObject& object : state.objects) {
    t.objects.push_back(ShardedObject{object.spec, std::string()});
  }
  return t;
}

Status CanonicalFramework::ToStateDicts(const HeterogeneousLayout& layout,
                                        const std::vector<TrainingState>& states,
                                        const ShardingConfig& sharding,
                                        std::vector<ShardedStateDict>* every_rank) const {
  return ShardTrainingState(layout, states, sharding, every_rank);
}

Status CanonicalFramework::ReadCheckpointInfo(const nlohmann::json& common,
                                              CheckpointInfo* info) const {
  return ckptspec::ReadCheckpointInfo(common, info);
}

Status CanonicalFramework::LoadTemplates(const HeterogeneousLayout& layout,
                                         const std::vector<TrainingConfig>& configs,
                                         const CheckpointInfo& saved, const LoadFlags& flags,
                                         std::vector<ShardedStateDict>* every_rank) const {
  return StateTemplates(layout, configs, saved, flags, every_rank);
}

Status CanonicalFramework::FromStateDicts(const std::vector<ShardedStateDict>& loaded,
                                          const HeterogeneousLayout& layout,
                                          const std::vector<TrainingConfig>& configs,
                                          const LoadFlags& flags,
                                          std::vector<TrainingState>* states) const {
  return RebuildTrainingState(loaded, layout, configs, flags, states);
}

}  // namespace ckptspec
