#include "targets/reference/save_plan.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

namespace ckptspec {

namespace {

class Hasher {
 public:
  Hasher() { XXH3_64bits_reset(&state_); }
  void Int(int64_t v) { XXH3_64bits_update(&state_, &v, sizeof(v)); }
  void Str(const std::string& s) {
    Int(static_cast<int64_t>(s.size()));
    XXH3_64bits_update(&state_, s.data(), s.size());
  }
  void DimsOf(const Dims& d) {
    Int(static_cast<int64_t>(d.size()));
    for (int64_t x : d) Int(x);
  }
  uint64_t Digest() { return XXH3_64bits_digest(&state_); }

 private:
  XXH3_state_t state_;
};

}  // namespace

uint64_t StructureFingerprint(const std::vector<ShardedStateDict>& every_rank) {
  Hasher h;
  h.Int(static_cast<int64_t>(every_rank.size()));
  for (const ShardedStateDict& dict : every_rank) {
    h.Int(static_cast<int64_t>(dict.tensors.size()));
    for (const ShardedTensor& t : dict.tensors) {
      h.Str(t.spec.key);
      h.Int(static_cast<int64_t>(t.spec.dtype));
      h.DimsOf(t.spec.global_shape);
      h.DimsOf(t.spec.global_offset);
      h.DimsOf(t.spec.local_shape);
      h.Int(t.spec.prepend_axis_num);
      h.DimsOf(t.spec.replica_id);
    }
    h.Int(static_cast<int64_t>(dict.objects.size()));
    for (const ShardedObject& o : dict.objects) {
      h.Str(o.spec.key);
      h.DimsOf(o.spec.global_shape);
      h.DimsOf(o.spec.global_offset);
      h.DimsOf(o.spec.replica_id);
    }
  }
  return h.Digest();
}

SavePlan MakeSavePlan(const std::vector<ShardedStateDict>& every_rank, uint64_t fingerprint) {
  SavePlan plan;
  plan.fingerprint = fingerprint;
  for (size_t rank = 0; rank < every_rank.size(); ++rank) {
    const ShardedStateDict& dict = every_rank[rank];
    for (size_t i = 0; i < dict.tensors.size(); ++i) {
      const TensorSpec& spec = dict.tensors[i].spec;
      if (!IsMainReplica(spec.replica_id)) continue;
      plan.items.push_back(WriteItem{false, static_cast<int64_t>(rank), i, spec.key, spec.box()});
    }
    for (size_t i = 0; i < dict.objects.size(); ++i) {
      const ObjectSpec& spec = dict.objects[i].spec;
      if (!IsMainReplica(spec.replica_id)) continue;
      plan.items.push_back(WriteItem{true, static_cast<int64_t>(rank), i, spec.UniqueKey(), Box()});
    }
  }
  return plan;
}

Status ResolvePlan(const SavePlan& plan, const std::vector<ShardedStateDict>& every_rank) {
  for (const WriteItem& item : plan.items) {
    auto stale = [&](const std::string& why) {
      return Status::FailedPrecondition("stale save plan: rank " + std::to_string(item.rank) +
                                        " item '" + item.key + "': " + why);
    };
    if (item.rank < 0 || static_cast<size_t>(item.rank) >= every_rank.size()) {
      return stale("the rank no longer exists");
    }
    const ShardedStateDict& dict = every_rank[item.rank];
    if (item.is_object) {
      if (item.index >= dict.objects.size() ||
          dict.objects[item.index].spec.UniqueKey() != item.key) {
        return stale("the object is gone from the state dict");
      }
    } else {
      if (item.index >= dict.tensors.size() || dict.tensors[item.index].spec.key != item.key ||
          dict.tensors[item.index].spec.box() != item.box) {
        return stale("the tensor chunk is gone from the state dict");
      }
    }
  }
  return Status::OK();
}

const SavePlan* PlanCache::Lookup(uint64_t fingerprint) const {
  if (!plan_ || plan_->fingerprint != fingerprint) return nullptr;
  ++hits_;
  return &*plan_;
}

void PlanCache::Store(const SavePlan& plan) { plan_ = plan; }

}  // namespace ckptspec
