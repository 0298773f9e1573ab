#include "model/state_entries.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "model/config_identity.h"
#include "model/data_iterator.h"
#include "model/recent_results.h"
#include "model/rerun_state_machine.h"
#include "model/rng_streams.h"
#include "model/scheduler.h"
#include "model/state_common.h"

namespace ckptspec {

std::string OptimizerPrefix(const std::string& module) {
  return module.empty() ? std::string("optimizer.") : "optimizer.mimo." + module + ".";
}

std::string OriginModule(const std::string& module) {
  return module.empty() ? std::string("model") : module;
}

namespace {

Dims PrependedOffsets(const ParameterSpec& p) {
  Dims d;
  if (p.prepend_axis_num > (p.is_expert() ? 1 : 0)) d.push_back(p.layer);
  if (p.is_expert()) d.push_back(p.expert);
  return d;
}

void PutLE(uint64_t bits, int size, uint8_t* out) {
  for (int b = 0; b < size; ++b) out[b] = static_cast<uint8_t>(bits >> (8 * b));
}

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Writes `n` elements of slot `slot` of parameter `p`, element k little-endian in `size` bytes at
// out + k * size: the slot's value at instance index index[k], as raw bits of the entry dtype
// (the step slot: the parameter's step; `index` unused). One loop per slot, so that the slot is
// decided once per run of elements.
void PutSlot(const TrainingState& s, int p, int slot, int size, int64_t n, const int64_t* index,
             uint8_t* out) {
  const ParamState& ps = s.params[p];
  switch (slot) {
    case kSlotModel:
      for (int64_t k = 0; k < n; ++k) PutLE(ps.model[index[k]], size, out + k * size);
      return;
    case kSlotExpAvg:
      for (int64_t k = 0; k < n; ++k) PutLE(FloatBits(ps.exp_avg[index[k]]), size, out + k * size);
      return;
    case kSlotExpAvgSq:
      for (int64_t k = 0; k < n; ++k) {
        PutLE(FloatBits(ps.exp_avg_sq[index[k]]), size, out + k * size);
      }
      return;
    case kSlotMaster:
      for (int64_t k = 0; k < n; ++k) {
        PutLE(FloatBits(static_cast<float>(MasterValue(s, p, index[k]))), size, out + k * size);
      }
      return;
    case kSlotStep:
      for (int64_t k = 0; k < n; ++k) PutLE(static_cast<uint64_t>(ps.step), size, out + k * size);
      return;
  }
}

ShardedTensor Sized(TensorSpec spec) {
  ShardedTensor t;
  t.data.assign(static_cast<size_t>(Volume(spec.local_shape)) * DTypeSize(spec.dtype), 0);
  t.spec = std::move(spec);
  return t;
}

ShardedObject Obj(std::string key, Dims shape, Dims offset, ReplicaId replica, std::string origin) {
  ShardedObject o;
  o.spec.key = std::move(key);
  o.spec.global_shape = std::move(shape);
  o.spec.global_offset = std::move(offset);
  o.spec.replica_id = std::move(replica);
  o.spec.origin = std::move(origin);
  return o;
}

bool IsExpertSub(const SubOptimizer& s) { return s.name == "expert"; }

}  // namespace

struct StatePlan::Fixed {
  ShardingConfig sharding;
  ParameterSharding params;  // its layout() is the plan's
  std::vector<Module> modules;
  std::vector<std::vector<bool>> initial_has_state;  // per module: the config's presence
  bool keeps_ranks = false;                          // a shared plan: keeps rank structures

  // Kept rank structures, by rank, one per optimizer-state presence of the rank's module.
  struct KeptRank {
    std::vector<bool> has_state;
    std::shared_ptr<const RankEntries> entries;
  };
  mutable std::mutex mu;
  mutable std::map<int64_t, std::vector<KeptRank>> kept;  // guarded by mu
  mutable size_t kept_bytes = 0;                          // guarded by mu
};

namespace {

// The bytes a kept structure holds, roughly: its buffers and index vectors.
size_t EntriesBytes(const RankEntries& e) {
  size_t bytes = sizeof e;
  for (const ShardedTensor& t : e.dict.tensors) {
    bytes += sizeof t + t.data.size() + t.spec.key.size() + t.spec.origin.size();
  }
  for (const ShardedObject& o : e.dict.objects) {
    bytes += sizeof o + o.data.size() + o.spec.key.size() + o.spec.origin.size();
  }
  for (const TensorRole& r : e.tensor_roles)
    bytes += sizeof r + r.pieces.size() * sizeof(BucketPiece);
  if (e.chunks) {  // a kept structure's own chunks; its filtered copies share them
    for (const ParamChunk& c : *e.chunks) {
      bytes += sizeof c + c.instance_index.size() * sizeof(int64_t) + c.spec.key.size();
    }
  }
  return bytes;
}

// Whether BuildRank under `filter` emits an entry of `kind`.
bool Admits(const EntryFilter& filter, EntryKind kind) {
  switch (kind) {
    case EntryKind::kModel:
      return filter.model;
    case EntryKind::kOptimState:
    case EntryKind::kOptimStep:
    case EntryKind::kBucket:
    case EntryKind::kModuleCommon:
      return filter.optimizer;
    case EntryKind::kSliceIndex:
      return filter.optimizer && filter.slice_index;
    case EntryKind::kRng:
      return filter.rng;
    case EntryKind::kRerun:
      return filter.rerun;
    case EntryKind::kData:
      return filter.data;
    case EntryKind::kReadWhole:  // the templates' own requests, never a rank's entry
      return false;
  }
  return false;
}

// The entries of `all` (built under every filter) that `filter` admits, in their order: what
// building under `filter` gives, since each entry class is appended independently of the others.
RankEntries Filtered(const RankEntries& all, const EntryFilter& filter) {
  RankEntries e;
  e.module = all.module;
  e.chunks = all.chunks;
  e.dict.tensors.reserve(all.dict.tensors.size());
  e.tensor_roles.reserve(all.dict.tensors.size());
  e.dict.objects.reserve(all.dict.objects.size());
  e.object_roles.reserve(all.dict.objects.size());
  for (size_t i = 0; i < all.dict.tensors.size(); ++i) {
    if (!Admits(filter, all.tensor_roles[i].kind)) continue;
    e.dict.tensors.push_back(all.dict.tensors[i]);
    e.tensor_roles.push_back(all.tensor_roles[i]);
  }
  for (size_t i = 0; i < all.dict.objects.size(); ++i) {
    if (!Admits(filter, all.object_roles[i].kind)) continue;
    e.dict.objects.push_back(all.dict.objects[i]);
    e.object_roles.push_back(all.object_roles[i]);
  }
  return e;
}

// The process's shared plans (StatePlan::Sharing::kShared).
RecentResults<StatePlan::Fixed>& SharedPlans() {
  // Never destroyed: a plan may be made during exit.
  static auto* plans = new RecentResults<StatePlan::Fixed>(StatePlan::kMaxSharedPlans);
  return *plans;
}

}  // namespace

std::shared_ptr<const StatePlan::Fixed> StatePlan::FindShared(
    const HeterogeneousLayout& layout, const std::vector<TrainingConfig>& configs,
    const ShardingConfig& sharding) {
  return SharedPlans().Find([&](const Fixed& plan) {
    if (plan.modules.size() != configs.size() || !Identical(plan.sharding, sharding) ||
        !Identical(plan.params.layout(), layout)) {
      return false;
    }
    for (size_t m = 0; m < configs.size(); ++m) {
      if (!Identical(plan.modules[m].config, configs[m])) return false;
    }
    return true;
  });
}

void StatePlan::KeepShared(std::shared_ptr<const Fixed> fixed) {
  SharedPlans().Keep(std::move(fixed));
}

Status StatePlan::Make(const HeterogeneousLayout& layout,
                       const std::vector<TrainingConfig>& configs, const ShardingConfig& sharding,
                       StatePlan* out, Sharing sharing) {
  if (configs.size() != layout.modules().size()) {
    return Status::InvalidArgument(std::to_string(configs.size()) + " configs for " +
                                   std::to_string(layout.modules().size()) + " layout modules");
  }
  if (sharding.optimizer_format == OptimizerFormat::kDpReshardable) {
    CKPTSPEC_RETURN_IF_ERROR(ValidateBufferConfig(sharding.buffers));
  }
  if (sharing == Sharing::kShared) {
    // Identical inputs made this plan before, so they pass the checks below again.
    if (std::shared_ptr<const Fixed> kept = FindShared(layout, configs, sharding)) {
      out->has_state_ = kept->initial_has_state;
      out->fixed_ = std::move(kept);
      return Status::OK();
    }
  }
  auto plan = std::make_shared<Fixed>();
  plan->sharding = sharding;
  std::vector<ModelConfig> models;
  for (const TrainingConfig& c : configs) models.push_back(c.model);
  CKPTSPEC_RETURN_IF_ERROR(ParameterSharding::Make(layout, models, &plan->params));
  int64_t elements = 0;  // parameter elements of every module
  for (size_t i = 0; i < configs.size(); ++i) {
    const ModuleLayout& ml = layout.modules()[i];
    const std::string label = "module '" + ml.name + "'";
    if (configs[i].data.dp_size != ml.layout.dp()) {
      return Status::InvalidArgument(
          label + ": data.dp_size = " + std::to_string(configs[i].data.dp_size) +
          " differs from the layout's DP = " + std::to_string(ml.layout.dp()));
    }
    Module m;
    m.config = configs[i];
    CKPTSPEC_RETURN_IF_ERROR(InitialTrainingState(configs[i], &m.structure).WithContext(label));
    for (size_t p = 0; p < m.structure.specs.size(); ++p) {
      m.instance[{m.structure.specs[p].key, PrependedOffsets(m.structure.specs[p])}] =
          static_cast<int>(p);
    }
    std::map<std::string, int> frozen_of_key;  // key -> first instance's frozen flag
    for (size_t p = 0; p < m.structure.specs.size(); ++p) {
      const ParameterSpec& ps = m.structure.specs[p];
      const int frozen = m.structure.params[p].frozen ? 1 : 0;
      auto it = frozen_of_key.emplace(ps.key, frozen).first;
      if (it->second != frozen) {
        return Status::NotSupported(
            label + ": " + ps.name + " is " + (frozen ? "frozen" : "trainable") +
            " but another instance of its stacked key '" + ps.key +
            "' is not; the "
            "optimizer state of that key would have gaps (freeze every instance)");
      }
    }
    if (configs[i].optimizer.freeze_family == FreezeFamily::kTorchOptim &&
        sharding.optimizer_format == OptimizerFormat::kDpReshardable) {
      return Status::NotSupported(
          label +
          ": the torch_optim freezing family has no dp_reshardable format (its buffers are "
          "Megatron's distributed optimizer's)");
    }
    std::vector<bool> has_state;
    for (const ParamState& p : m.structure.params) {
      has_state.push_back(HasOptimizerState(p));
      elements += static_cast<int64_t>(p.model.size());
    }
    plan->initial_has_state.push_back(std::move(has_state));
    m.sub_of_param.assign(m.structure.specs.size(), -1);
    for (size_t o = 0; o < m.structure.optimizers.size(); ++o) {
      const SubOptimizer& sub = m.structure.optimizers[o];
      for (const ParamGroup& g : sub.groups) {
        for (int p : g.params) {
          m.sub_of_param[p] = static_cast<int>(o);
          if (sharding.optimizer_format == OptimizerFormat::kDpReshardable && !IsExpertSub(sub) &&
              m.structure.specs[p].is_expert()) {
            return Status::NotSupported(
                label +
                ": dp_reshardable shards expert parameters over the "
                "expert-DP group and needs the dense + expert chained optimizer (" +
                m.structure.specs[p].name + " is in sub-optimizer '" + sub.name + "')");
          }
        }
      }
    }
    plan->modules.push_back(std::move(m));
  }
  plan->keeps_ranks = sharing == Sharing::kShared && elements <= kMaxSharedElements;
  out->has_state_ = plan->initial_has_state;
  out->fixed_ = plan;
  if (plan->keeps_ranks) KeepShared(std::move(plan));
  return Status::OK();
}

const HeterogeneousLayout& StatePlan::layout() const { return fixed_->params.layout(); }
const TrainingConfig& StatePlan::config(int module) const { return fixed_->modules[module].config; }
const TrainingState& StatePlan::structure(int module) const {
  return fixed_->modules[module].structure;
}
const ShardingConfig& StatePlan::sharding() const { return fixed_->sharding; }

// True when two ranks of one DP-CP group differ in their expert coordinates (ep, etp), so their
// expert RNG trackers differ and one (pp, tp) cell cannot hold them all. With pp last this follows
// from ep > 1 or etp != tp; other rank orders can interleave the expert axes with DP-CP.
static bool ExpertCoordsVaryWithinDataContext(const Layout& layout) {
  for (int64_t rank = 0; rank < layout.world_size(); ++rank) {
    const RankCoords c = layout.Coords(rank);
    const RankCoords base = layout.Coords(layout.Group(GroupKind::kDataContext, rank).front());
    if (c.ep != base.ep || c.etp != base.etp) return true;
  }
  return false;
}

Status StatePlan::SetOptimizerState(int module, const std::vector<bool>& present) {
  if (module < 0 || module >= static_cast<int>(fixed_->modules.size())) {
    return Status::InvalidArgument("no module " + std::to_string(module));
  }
  const Module& m = fixed_->modules[module];
  if (m.config.optimizer.freeze_family != FreezeFamily::kTorchOptim) {
    return Status::InvalidArgument(
        "which parameters have optimizer state is the config's under the megatron freezing family");
  }
  if (present.size() != has_state_[module].size()) {
    return Status::InvalidArgument(std::to_string(present.size()) + " optimizer state flags for " +
                                   std::to_string(has_state_[module].size()) + " parameters");
  }
  CKPTSPEC_RETURN_IF_ERROR(CheckStackedKeysWhole(m.structure.specs, present));
  has_state_[module] = present;
  return Status::OK();
}

ObjectSpec StatePlan::RngObjectSpec(const std::string& module, const Layout& layout,
                                    RngSaving saving, bool data_parallel_random_init,
                                    int64_t local_rank, std::vector<int64_t>* holders) {
  const RankCoords c = layout.Coords(local_rank);
  const bool by_dp = layout.ep() > 1 || layout.etp() != layout.tp() || data_parallel_random_init ||
                     ExpertCoordsVaryWithinDataContext(layout);
  ObjectSpec o = RankLocalObjectSpec((module.empty() ? std::string() : module + ".") + "rng_state");
  o.origin = OriginModule(module) + ":rng";
  holders->clear();
  if (saving == RngSaving::kRankLocal) {
    holders->push_back(local_rank);
  } else if (by_dp) {
    o.global_shape = {layout.pp(), layout.tp(), layout.GroupSize(GroupKind::kDataContext)};
    o.global_offset = {c.pp, c.tp, c.dp_cp};
    o.replica_id = {0};
    holders->push_back(local_rank);
  } else {
    o.global_shape = {layout.pp(), layout.tp()};
    o.global_offset = {c.pp, c.tp};
    o.replica_id = {c.dp_cp};
    *holders = layout.Group(GroupKind::kDataContext, local_rank);
  }
  return o;
}

ObjectSpec StatePlan::RerunObjectSpec(int64_t world, int64_t rank) {
  return Obj("rerun_state_machine_state", {world}, {rank}, {0}, "run:rerun_state_machine").spec;
}

ObjectSpec StatePlan::DataIteratorObjectSpec(const std::string& module, const Layout& layout,
                                             int64_t dp, const ReplicaId& replica) {
  return Obj((module.empty() ? std::string() : module + ".") + "data_iterator", {layout.dp()}, {dp},
             replica, OriginModule(module) + ":data_iterator")
      .spec;
}

nlohmann::json StatePlan::ModuleCommon(const TrainingState& s) {
  return nlohmann::json{{"optimizer", SubOptimizersToJson(s.optimizers)},
                        {"opt_param_scheduler", SchedulerStateToJson(s.scheduler)}};
}

void StatePlan::AppendOptimizer(const Module& m, int module_index, int64_t local_rank, bool moments,
                                const std::vector<bool>& has_state, RankEntries* out) const {
  const ShardingConfig& sharding = fixed_->sharding;
  const ModuleLayout& ml = fixed_->params.layout().modules()[module_index];
  const RankCoords c = ml.layout.Coords(local_rank);
  const bool mixed = m.config.model.params_dtype != DType::kFloat32;
  const size_t nsubs = m.structure.optimizers.size();
  const std::string origin = OriginModule(ml.name) + ":optimizer.";
  const size_t nchunks = out->chunks->size();
  for (size_t k = 0; k < nchunks; ++k) {
    const int p = out->chunk(k).param;
    const int sub = m.sub_of_param[p];
    if (sub < 0 || !has_state[p]) continue;
    const bool chained =
        nsubs > 1 && (sharding.optimizer_format != OptimizerFormat::kFullyReshardable ||
                      !sharding.chained_avoid_prefix);
    const std::string prefix = (chained ? "chained_" + std::to_string(sub) + "." : std::string()) +
                               OptimizerPrefix(ml.name);
    const TensorSpec& model = out->chunk(k).spec;
    struct {
      const char* name;
      int slot;
    } states[] = {
        {"exp_avg", kSlotExpAvg}, {"exp_avg_sq", kSlotExpAvgSq}, {"fp32_param", kSlotMaster}};
    for (const auto& st : states) {
      if (!moments || (st.slot == kSlotMaster && !mixed)) continue;
      TensorSpec t = model;
      t.key = prefix + "state." + st.name + "." + model.key;
      t.dtype = DType::kFloat32;
      t.origin = origin + st.name;
      out->dict.tensors.push_back(Sized(std::move(t)));
      TensorRole role;
      role.kind = EntryKind::kOptimState;
      role.slot = st.slot;
      role.chunk = static_cast<int>(k);
      out->tensor_roles.push_back(role);
    }
    TensorSpec step;
    step.key = prefix + "state.step." + model.key;
    step.dtype = DType::kInt64;
    step.prepend_axis_num = model.prepend_axis_num;
    for (int a = 0; a < model.prepend_axis_num; ++a) {
      step.global_shape.push_back(model.global_shape[a]);
      step.global_offset.push_back(model.global_offset[a]);
      step.axis_fragmentations.push_back(model.axis_fragmentations[a]);
    }
    step.global_shape.push_back(1);
    step.global_offset.push_back(0);
    step.axis_fragmentations.push_back(1);
    step.local_shape = {1};
    step.replica_id = model.replica_id;
    step.replica_id[1] = m.structure.specs[p].is_expert() ? c.etp : c.tp;
    step.origin = origin + "step";
    out->dict.tensors.push_back(Sized(std::move(step)));
    TensorRole role;
    role.kind = EntryKind::kOptimStep;
    role.slot = kSlotStep;
    role.chunk = static_cast<int>(k);
    out->tensor_roles.push_back(role);
  }
}

void StatePlan::AppendBuckets(const Module& m, int module_index, int64_t local_rank,
                              bool slice_index, RankEntries* out) const {
  const ModuleLayout& ml = fixed_->params.layout().modules()[module_index];
  const Layout& L = ml.layout;
  const RankCoords c = L.Coords(local_rank);
  const bool mixed = m.config.model.params_dtype != DType::kFloat32;
  const size_t nsubs = m.structure.optimizers.size();
  const std::string origin = OriginModule(ml.name) + ":optimizer.";
  for (size_t sub = 0; sub < nsubs; ++sub) {
    const bool expert = IsExpertSub(m.structure.optimizers[sub]);
    const int64_t dp_size = expert ? L.edp() : L.GroupSize(GroupKind::kDataContext);
    const int64_t dp_rank = expert ? c.edp : c.dp_cp;
    const int64_t mp = expert ? c.etp + L.etp() * (c.ep + L.ep() * c.pp) : c.tp + L.tp() * c.pp;
    const std::string prefix =
        (nsubs > 1 ? "chained_" + std::to_string(sub) + "." : std::string()) +
        OptimizerPrefix(ml.name) + "distributed.dp_group_idx_" + std::to_string(mp) + ".";
    std::vector<int> chunk_of;  // buffer input index -> chunk
    std::vector<int64_t> numels;
    for (size_t k = 0; k < out->chunks->size(); ++k) {
      if (m.sub_of_param[out->chunk(k).param] != static_cast<int>(sub)) continue;
      chunk_of.push_back(static_cast<int>(k));
      numels.push_back(Volume(out->chunk(k).spec.local_shape));
    }
    const BufferLayout buf = LayoutBuffer(numels, fixed_->sharding.buffers, dp_size);
    nlohmann::json index = nlohmann::json::array();
    for (size_t b = 0; b < buf.buckets.size(); ++b) {
      int64_t begin = 0, end = 0;
      buf.Slice(static_cast<int>(b), dp_rank, &begin, &end);
      if (end <= begin) continue;
      std::vector<BucketPiece> pieces;
      for (const BufferParam& bp : buf.params) {
        if (bp.bucket != static_cast<int>(b)) continue;
        const int64_t lo = std::max(bp.start_in_bucket, begin);
        const int64_t hi = std::min(bp.start_in_bucket + bp.numel, end);
        if (hi <= lo) continue;
        BucketPiece piece;
        piece.chunk = chunk_of[bp.input_index];
        piece.dst = lo - begin;
        piece.src = lo - bp.start_in_bucket;
        piece.length = hi - lo;
        pieces.push_back(piece);
        index.push_back(
            nlohmann::json{{"param", m.structure.specs[out->chunk(piece.chunk).param].name},
                           {"bucket", b},
                           {"begin", piece.src},
                           {"end", piece.src + piece.length}});
      }
      struct {
        const char* name;
        int slot;
      } states[] = {
          {"param", kSlotMaster}, {"exp_avg", kSlotExpAvg}, {"exp_avg_sq", kSlotExpAvgSq}};
      for (const auto& st : states) {
        if (st.slot == kSlotMaster && !mixed) continue;
        TensorSpec t;
        t.key = prefix + "gbuf_idx_0.dtype_" + DTypeName(m.config.model.params_dtype) +
                ".bucket_idx_" + std::to_string(b) + "." + st.name;
        t.dtype = DType::kFloat32;
        t.global_shape = {buf.buckets[b].numel_unpadded};
        t.global_offset = {begin};
        t.local_shape = {end - begin};
        t.replica_id = {0, 0, 0};
        t.origin = origin + st.name;
        out->dict.tensors.push_back(Sized(std::move(t)));
        TensorRole role;
        role.kind = EntryKind::kBucket;
        role.slot = st.slot;
        role.pieces = pieces;
        out->tensor_roles.push_back(std::move(role));
      }
    }
    if (slice_index) {
      ShardedObject o = Obj(prefix + "param_state", {dp_size}, {dp_rank}, {0, 0, 0},
                            OriginModule(ml.name) + ":optimizer.param_state");
      o.data = index.dump();
      out->dict.objects.push_back(std::move(o));
      ObjectRole role;
      role.kind = EntryKind::kSliceIndex;
      out->object_roles.push_back(role);
    }
  }
}

Status StatePlan::BuildStructure(int64_t rank, const EntryFilter& filter,
                                 const std::vector<bool>& has_state, RankEntries* out) const {
  const HeterogeneousLayout& layout = fixed_->params.layout();
  RankEntries e;
  e.module = layout.ModuleOf(rank);
  const ModuleLayout& ml = layout.modules()[e.module];
  const Module& m = fixed_->modules[e.module];
  const int64_t local = layout.LocalRank(rank);
  const RankCoords c = ml.layout.Coords(local);

  // Model chunks (always computed: the optimizer entries derive from them).
  auto chunks = std::make_shared<std::vector<ParamChunk>>();
  for (TensorSpec& t : fixed_->params.RankTensors(rank)) {
    ParamChunk chunk;
    const Dims pre(t.global_offset.begin(), t.global_offset.begin() + t.prepend_axis_num);
    auto it = m.instance.find({t.key, pre});
    if (it == m.instance.end()) {
      return Status::InvalidArgument("no parameter instance for '" + t.key + "' at " +
                                     DimsToString(pre));
    }
    chunk.param = it->second;
    const Dims& shape = m.structure.specs[chunk.param].shape;
    Box box;
    box.offset.assign(t.global_offset.begin() + t.prepend_axis_num, t.global_offset.end());
    box.shape = t.local_shape;
    const int64_t n = Volume(box.shape);
    chunk.instance_index.resize(static_cast<size_t>(n));
    Dims idx(box.shape.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      Dims g(box.shape.size());
      for (size_t a = 0; a < g.size(); ++a) g[a] = box.offset[a] + idx[a];
      chunk.instance_index[k] = LinearIndex(g, shape);
      for (int a = static_cast<int>(idx.size()) - 1; a >= 0; --a) {
        if (++idx[a] < box.shape[a]) break;
        idx[a] = 0;
      }
    }
    chunk.spec = std::move(t);
    chunks->push_back(std::move(chunk));
  }
  e.chunks = std::move(chunks);
  if (filter.model) {
    for (size_t k = 0; k < e.chunks->size(); ++k) {
      e.dict.tensors.push_back(Sized(e.chunk(k).spec));
      TensorRole role;
      role.kind = EntryKind::kModel;
      role.slot = kSlotModel;
      role.chunk = static_cast<int>(k);
      e.tensor_roles.push_back(role);
    }
  }
  if (filter.optimizer) {
    if (fixed_->sharding.optimizer_format == OptimizerFormat::kFullyReshardable) {
      AppendOptimizer(m, e.module, local, /*moments=*/true, has_state, &e);
    } else {
      AppendBuckets(m, e.module, local, filter.slice_index, &e);
      AppendOptimizer(m, e.module, local, /*moments=*/false, has_state, &e);
    }
    if (!ml.name.empty()) {
      e.dict.objects.push_back(Obj(OptimizerPrefix(ml.name) + "common_state", {1}, {0},
                                   {c.pp, c.tp, c.dp_cp},
                                   OriginModule(ml.name) + ":optimizer.common"));
      e.object_roles.push_back(ObjectRole{EntryKind::kModuleCommon, {}});
    }
  }
  if (filter.rng) {
    ObjectRole role;
    role.kind = EntryKind::kRng;
    ShardedObject o;
    o.spec = RngObjectSpec(ml.name, ml.layout, m.config.rng_saving,
                           m.config.data_parallel_random_init, local, &role.saved_ranks);
    e.dict.objects.push_back(std::move(o));
    e.object_roles.push_back(std::move(role));
  }
  if (filter.rerun) {
    ShardedObject o;
    o.spec = RerunObjectSpec(layout.world_size(), rank);
    e.dict.objects.push_back(std::move(o));
    e.object_roles.push_back(ObjectRole{EntryKind::kRerun, {}});
  }
  if (filter.data) {
    ShardedObject o;
    o.spec = DataIteratorObjectSpec(ml.name, ml.layout, c.dp, {c.pp, c.tp, c.cp});
    e.dict.objects.push_back(std::move(o));
    e.object_roles.push_back(ObjectRole{EntryKind::kData, {}});
  }
  *out = std::move(e);
  return Status::OK();
}

Status StatePlan::KeptStructure(int64_t rank, std::shared_ptr<const RankEntries>* out) const {
  const std::vector<bool>& has_state = has_state_[fixed_->params.layout().ModuleOf(rank)];
  // The kept structure of `rank` for `has_state`, or null. Called under fixed_->mu.
  const auto find_kept = [&]() -> std::shared_ptr<const RankEntries> {
    auto it = fixed_->kept.find(rank);
    if (it == fixed_->kept.end()) return nullptr;
    for (const Fixed::KeptRank& k : it->second) {
      if (k.has_state == has_state) return k.entries;
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(fixed_->mu);
    if ((*out = find_kept())) return Status::OK();
  }
  // Built outside the lock; another thread may build the same structure meanwhile.
  auto built = std::make_shared<RankEntries>();
  CKPTSPEC_RETURN_IF_ERROR(BuildStructure(rank, EntryFilter(), has_state, built.get()));
  const size_t bytes = EntriesBytes(*built);
  std::lock_guard<std::mutex> lock(fixed_->mu);
  if ((*out = find_kept())) return Status::OK();
  if (fixed_->kept_bytes + bytes <= kMaxKeptRankBytes) {
    fixed_->kept[rank].push_back(Fixed::KeptRank{has_state, built});
    fixed_->kept_bytes += bytes;
  }
  *out = std::move(built);
  return Status::OK();
}

Status StatePlan::Fill(int64_t rank, const TrainingState& state, ModulePayloads* payloads,
                       RankEntries* entries) const {
  RankEntries& e = *entries;
  const HeterogeneousLayout& layout = fixed_->params.layout();
  const ModuleLayout& ml = layout.modules()[e.module];
  const Module& m = fixed_->modules[e.module];
  const RankCoords c = ml.layout.Coords(layout.LocalRank(rank));
  for (size_t i = 0; i < e.dict.objects.size(); ++i) {
    ShardedObject& o = e.dict.objects[i];
    switch (e.object_roles[i].kind) {
      case EntryKind::kModuleCommon:
        if (!payloads->common) payloads->common = ModuleCommon(state).dump();
        o.data = *payloads->common;
        break;
      case EntryKind::kRng: {
        int found = -1;
        for (size_t r = 0; r < state.config.ranks.size() && found < 0; ++r) {
          if (state.config.ranks[r] == c) found = static_cast<int>(r);
        }
        if (found < 0 || static_cast<size_t>(found) >= state.rng.size()) {
          return Status::NotFound("module '" + ml.name + "': the state holds no RNG for rank " +
                                  std::to_string(rank) + " at " + DescribeCoords(c));
        }
        o.data = RankRngStateToJson(state.rng[found]).dump();
        break;
      }
      case EntryKind::kRerun:
        if (!payloads->rerun) {
          nlohmann::json payload;
          CKPTSPEC_RETURN_IF_ERROR(CheckpointPayload(state.rerun, &payload));
          payloads->rerun = payload.dump();
        }
        o.data = *payloads->rerun;
        break;
      case EntryKind::kData:
        // Each DP rank saves its own loader (kPerRank) next to the run's shared position.
        CKPTSPEC_RETURN_IF_ERROR(CheckDataIterator(m.config.data, state.data)
                                     .WithContext("rank " + std::to_string(rank)));
        o.data = DataIteratorRankToJson(state.data, c.dp).dump();
        break;
      default:  // the slice index is the structure's own; nothing else is an object
        break;
    }
  }
  for (size_t i = 0; i < e.dict.tensors.size(); ++i) {
    ShardedTensor& t = e.dict.tensors[i];
    const TensorRole& role = e.tensor_roles[i];
    const int size = DTypeSize(t.spec.dtype);
    if (role.kind == EntryKind::kBucket) {
      for (const BucketPiece& piece : role.pieces) {
        const ParamChunk& ch = e.chunk(piece.chunk);
        PutSlot(state, ch.param, role.slot, size, piece.length,
                ch.instance_index.data() + piece.src, t.data.data() + piece.dst * size);
      }
      continue;
    }
    const ParamChunk& ch = e.chunk(role.chunk);
    if (role.kind == EntryKind::kOptimStep) {
      PutSlot(state, ch.param, kSlotStep, size, 1, nullptr, t.data.data());
      continue;
    }
    PutSlot(state, ch.param, role.slot, size, static_cast<int64_t>(ch.instance_index.size()),
            ch.instance_index.data(), t.data.data());
  }
  return Status::OK();
}

Status StatePlan::BuildRank(int64_t rank, const EntryFilter& filter, const TrainingState* state,
                            RankEntries* out, ModulePayloads* payloads) const {
  RankEntries e;
  if (fixed_->keeps_ranks) {
    std::shared_ptr<const RankEntries> all;
    CKPTSPEC_RETURN_IF_ERROR(KeptStructure(rank, &all));
    e = Filtered(*all, filter);
  } else {
    CKPTSPEC_RETURN_IF_ERROR(
        BuildStructure(rank, filter, has_state_[fixed_->params.layout().ModuleOf(rank)], &e));
  }
  if (state) {
    ModulePayloads own;
    CKPTSPEC_RETURN_IF_ERROR(Fill(rank, *state, payloads ? payloads : &own, &e));
  }
  *out = std::move(e);
  return Status::OK();
}

}  // namespace ckptspec
