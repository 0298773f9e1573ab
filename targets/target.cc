#include "targets/target.h"

#include "model/param_sharding.h"

namespace ckptspec {

namespace {
constexpr const char* kStrictNames[kNumStrictModes] = {
    "assume_ok_unexpected", "log_unexpected", "log_all",    "raise_unexpected",
    "raise_all",            "return_unexpected", "return_all", "ignore_all"};
}  // namespace

const char* StrictModeName(StrictMode mode) { return kStrictNames[static_cast<int>(mode)]; }

bool ParseStrictMode(const std::string& name, StrictMode* out) {
  for (int i = 0; i < kNumStrictModes; ++i) {
    if (name == kStrictNames[i]) {
      *out = static_cast<StrictMode>(i);
      return true;
    }
  }
  return false;
}

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

Status CanonicalFramework::ToStateDicts(const ParameterSharding& sharding, uint64_t seed,
                                        std::vector<ShardedStateDict>* every_rank) const {
  every_rank->clear();
  for (int64_t rank = 0; rank < sharding.world_size(); ++rank) {
    every_rank->push_back(sharding.RankStateDict(rank, seed));
  }
  return Status::OK();
}

Status CanonicalFramework::LoadTemplates(const ParameterSharding& sharding,
                                         std::vector<ShardedStateDict>* every_rank) const {
  every_rank->clear();
  for (int64_t rank = 0; rank < sharding.world_size(); ++rank) {
    ShardedStateDict t;
    for (const TensorSpec& spec : sharding.RankTensors(rank)) {
      int64_t n = 0;
      if (!CheckedVolume(spec.local_shape, &n)) {
        return Status::InvalidArgument("tensor '" + spec.key + "': bad local shape");
      }
      t.tensors.push_back(ShardedTensor{spec, std::vector<uint8_t>(n * DTypeSize(spec.dtype), 0)});
    }
    every_rank->push_back(std::move(t));
  }
  return Status::OK();
}

}  // namespace ckptspec
