#include "targets/target.h"

#include <map>
#include <utility>

#include "model/box.h"
#include "model/param_sharding.h"

namespace ckptspec {

const char* PlacementName(Placement placement) {
  switch (placement) {
    case Placement::kDevice:
      return "device";
    case Placement::kHost:
      return "host";
  }
  return "?";
}

SaveInput::SaveInput(std::vector<ShardedStateDict>&& every_rank)
    : every_rank_(std::make_shared<const std::vector<ShardedStateDict>>(std::move(every_rank))) {}

SaveInput::SaveInput(const std::vector<ShardedStateDict>& every_rank)
    : every_rank_(std::make_shared<const std::vector<ShardedStateDict>>(every_rank)) {}

SaveInput::SaveInput(std::shared_ptr<const std::vector<ShardedStateDict>> live,
                     std::vector<std::vector<Placement>> placement)
    : every_rank_(live ? std::move(live) : std::make_shared<const std::vector<ShardedStateDict>>()),
      placement_(std::move(placement)) {}

Placement SaveInput::placement(size_t rank, size_t tensor) const {
  if (rank >= placement_.size() || tensor >= placement_[rank].size()) return Placement::kDevice;
  return placement_[rank][tensor];
}

std::vector<std::vector<Placement>> EveryTensorOn(const std::vector<ShardedStateDict>& every_rank,
                                                  Placement where) {
  std::vector<std::vector<Placement>> placement;
  for (const ShardedStateDict& d : every_rank) placement.emplace_back(d.tensors.size(), where);
  return placement;
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

Status CanonicalFramework::FromStateDicts(const LoadedCheckpoint& load,
                                          std::vector<TrainingState>* states) const {
  return RebuildTrainingState(load.loaded, load.layout, load.configs, load.flags, states);
}

std::vector<ShardedStateDict> RequestedSpecs(const std::vector<ShardedStateDict>& templates) {
  std::vector<ShardedStateDict> specs(templates.size());
  for (size_t r = 0; r < templates.size(); ++r) {
    specs[r].tensors.reserve(templates[r].tensors.size());
    for (const ShardedTensor& t : templates[r].tensors) {
      specs[r].tensors.push_back(ShardedTensor{t.spec, {}});
    }
    for (const ShardedObject& o : templates[r].objects) {
      specs[r].objects.push_back(ShardedObject{o.spec, std::string()});
    }
  }
  return specs;
}

Status ToCanonicalLoad(const LoadedCheckpoint& load, const MissingEntryFill& fill,
                       std::vector<ShardedStateDict>* canonical) {
  std::vector<ShardedStateDict> wanted;
  CKPTSPEC_RETURN_IF_ERROR(
      StateTemplates(load.layout, load.configs, load.saved, load.flags, &wanted));
  for (size_t r = 0; r < wanted.size(); ++r) {
    const ShardedStateDict* have = r < load.loaded.size() ? &load.loaded[r] : nullptr;
    std::map<std::pair<std::string, Dims>, const ShardedTensor*> tensors;
    std::map<std::string, const ShardedObject*> objects;
    if (have != nullptr) {
      for (const ShardedTensor& t : have->tensors) tensors[{t.spec.key, t.spec.global_offset}] = &t;
      for (const ShardedObject& o : have->objects) objects[o.spec.UniqueKey()] = &o;
      wanted[r].common = have->common;
    }
    const std::string who = "rank " + std::to_string(r) + ": ";
    for (ShardedTensor& t : wanted[r].tensors) {
      auto it = tensors.find({t.spec.key, t.spec.global_offset});
      if (it != tensors.end() && it->second->spec.local_shape == t.spec.local_shape &&
          it->second->data.size() == t.data.size()) {
        t.data = it->second->data;
      } else if (!fill.tensor || !fill.tensor(r, &t)) {
        return Status::NotFound(who + "the load holds no tensor '" + t.spec.key + "' at offset " +
                                DimsToString(t.spec.global_offset) + " of local shape " +
                                DimsToString(t.spec.local_shape));
      }
    }
    for (ShardedObject& o : wanted[r].objects) {
      auto it = objects.find(o.spec.UniqueKey());
      if (it != objects.end()) {
        o.data = it->second->data;
      } else if (!fill.object || !fill.object(r, &o)) {
        return Status::NotFound(who + "the load holds no object '" + o.spec.UniqueKey() + "'");
      }
    }
  }
  *canonical = std::move(wanted);
  return Status::OK();
}

LoadFlags FlagsLeavingOut(const LoadFlags& flags, OwnRuleClass replaced) {
  LoadFlags out = flags;
  switch (replaced) {
    case OwnRuleClass::kRng:
      out.no_load_rng = true;
      break;
    case OwnRuleClass::kDataIterator:
      out.reset_dataloader = true;
      break;
  }
  return out;
}

Status RebuildWithOwnRule(const LoadedCheckpoint& load, const MissingEntryFill& fill,
                          const OwnLoadRule& rule, std::vector<TrainingState>* states) {
  if (!rule.apply) return Status::InvalidArgument("an own load rule without a function");
  const LoadFlags canonical_flags = FlagsLeavingOut(load.flags, rule.replaces);
  // (The canonical rebuild reads nothing else of the load.)
  const LoadedCheckpoint canonical_load{load.loaded, load.requested, load.saved,
                                        load.layout, load.configs,   canonical_flags};
  std::vector<ShardedStateDict> canonical;
  CKPTSPEC_RETURN_IF_ERROR(ToCanonicalLoad(canonical_load, fill, &canonical));
  CKPTSPEC_RETURN_IF_ERROR(
      CanonicalFramework().FromStateDicts(canonical_load.WithLoaded(canonical), states));
  for (size_t m = 0; m < states->size(); ++m) {
    CKPTSPEC_RETURN_IF_ERROR(rule.apply(load, m, &(*states)[m]));
  }
  return Status::OK();
}

}  // namespace ckptspec
