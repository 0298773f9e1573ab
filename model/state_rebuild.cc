// RebuildTrainingState (state_sharding.h): loaded dicts -> the checkpoint's state as the loaded
// entries show it (a "saved view") -> the load rules (ExpectedStateAfterLoad).
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "model/float_codec.h"
#include "model/json_util.h"
#include "model/rerun_state_machine.h"
#include "model/rng_streams.h"
#include "model/scheduler.h"
#include "model/state_common.h"
#include "model/state_entries.h"
#include "model/state_sharding.h"

namespace ckptspec {

namespace {

using nlohmann::json;

uint64_t GetLE(const uint8_t* p, int size) {
  uint64_t v = 0;
  for (int b = 0; b < size; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
  return v;
}

float BitsToFloat(uint64_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Every element of every slot of every parameter of one module, with which were loaded.
class Assembly {
 public:
  explicit Assembly(const TrainingState& structure) {
    for (int s = 0; s < kNumSlots; ++s) {
      values_[s].resize(structure.specs.size());
      filled_[s].resize(structure.specs.size());
      for (size_t p = 0; p < structure.specs.size(); ++p) {
        const size_t n = s == kSlotStep ? 1 : structure.params[p].model.size();
        values_[s][p].assign(n, 0);
        filled_[s][p].assign(n, false);
      }
    }
  }
  // False, changing nothing, when another loaded replica put different bits at the element.
  bool Put(int slot, int param, int64_t index, uint64_t bits) {
    uint64_t& v = values_[slot][param][static_cast<size_t>(index)];
    std::vector<bool>& filled = filled_[slot][param];
    const size_t i = static_cast<size_t>(index);
    if (filled[i] && v != bits) return false;
    v = bits;
    filled[i] = true;
    return true;
  }
  // NotFound naming the parameter and the first element no loaded entry held.
  Status Complete(int slot, int param, const std::string& what) const {
    const auto& f = filled_[slot][param];
    for (size_t i = 0; i < f.size(); ++i) {
      if (!f[i])
        return Status::NotFound(what + ": element " + std::to_string(i) +
                                " was in no loaded entry");
    }
    return Status::OK();
  }
  const std::vector<uint64_t>& values(int slot, int param) const { return values_[slot][param]; }

 private:
  std::vector<std::vector<uint64_t>> values_[kNumSlots];
  std::vector<std::vector<bool>> filled_[kNumSlots];
};

std::string TensorWhere(int64_t rank, const TensorSpec& t) {
  return "rank " + std::to_string(rank) + " tensor '" + t.key + "' " + BoxToString(t.box());
}

// The error of an Assembly::Put that found replicas disagreeing (spelled only then).
Status ReplicasDisagree(int64_t rank, const TensorSpec& t, int64_t index) {
  return Status::Corruption(TensorWhere(rank, t) + ": replicas disagree at element " +
                            std::to_string(index));
}

// Pairs the loaded dict of `rank` with its template; out[i] = loaded index of template entry i.
Status Match(int64_t rank, const ShardedStateDict& loaded, const RankEntries& templ,
             std::vector<const ShardedTensor*>* tensors,
             std::vector<const ShardedObject*>* objects) {
  // Keyed by views of the template's keys, which outlive the index.
  std::map<std::pair<std::string_view, Dims>, size_t> tindex;
  for (size_t i = 0; i < templ.dict.tensors.size(); ++i) {
    tindex[{templ.dict.tensors[i].spec.key, templ.dict.tensors[i].spec.global_offset}] = i;
  }
  tensors->assign(templ.dict.tensors.size(), nullptr);
  for (const ShardedTensor& t : loaded.tensors) {
    auto it = tindex.find({std::string_view(t.spec.key), t.spec.global_offset});
    if (it == tindex.end())
      return Status::InvalidArgument(TensorWhere(rank, t.spec) + " is unexpected");
    const TensorSpec& want = templ.dict.tensors[it->second].spec;
    if (t.spec.dtype != want.dtype || t.spec.global_shape != want.global_shape ||
        t.spec.local_shape != want.local_shape ||
        t.data.size() != static_cast<size_t>(Volume(want.local_shape)) * DTypeSize(want.dtype)) {
      return Status::InvalidArgument(
          TensorWhere(rank, t.spec) + " is misshapen: " + DTypeName(t.spec.dtype) + " " +
          DimsToString(t.spec.global_shape) + " local " + DimsToString(t.spec.local_shape) + ", " +
          std::to_string(t.data.size()) + " bytes; expected " + DTypeName(want.dtype) + " " +
          DimsToString(want.global_shape) + " local " + DimsToString(want.local_shape));
    }
    (*tensors)[it->second] = &t;
  }
  for (size_t i = 0; i < tensors->size(); ++i) {
    if (!(*tensors)[i]) {
      return Status::NotFound(TensorWhere(rank, templ.dict.tensors[i].spec) + " is missing");
    }
  }
  std::map<std::string, size_t> oindex;
  for (size_t i = 0; i < templ.dict.objects.size(); ++i)
    oindex[templ.dict.objects[i].spec.UniqueKey()] = i;
  objects->assign(templ.dict.objects.size(), nullptr);
  for (const ShardedObject& o : loaded.objects) {
    auto it = oindex.find(o.spec.UniqueKey());
    if (it == oindex.end()) {
      return Status::InvalidArgument("rank " + std::to_string(rank) + " object '" +
                                     o.spec.UniqueKey() + "' is unexpected");
    }
    (*objects)[it->second] = &o;
  }
  for (size_t i = 0; i < objects->size(); ++i) {
    if (!(*objects)[i]) {
      return Status::NotFound("rank " + std::to_string(rank) + " object '" +
                              templ.dict.objects[i].spec.UniqueKey() + "' is missing");
    }
  }
  return Status::OK();
}

// Objects' bytes as JSON (the project's reader: bounded depth, no duplicate keys), each distinct
// text parsed once: replicated objects (a module's common state, the rerun state) hold the same
// bytes on every rank. The bytes read must outlive the reader (they key it); a text that fails to
// parse is not kept, so every copy reports its error. `what()` names the object in that error; it
// is called only then.
class StoredJsonReader {
 public:
  // On success *out points at the parsed value, which lives as long as the reader.
  template <typename What>
  Status Read(const std::string& bytes, const What& what, const json** out) {
    auto kept = parsed_.find(std::string_view(bytes));
    if (kept == parsed_.end()) {
      json parsed;
      const Status read = ParseJson(bytes, JsonLimits(), &parsed);
      if (!read.ok()) return Status::Corruption(what() + " is not valid JSON: " + read.message());
      kept = parsed_.emplace(std::string_view(bytes), std::move(parsed)).first;
    }
    *out = &kept->second;  // unordered_map keeps its elements in place
    return Status::OK();
  }

 private:
  std::unordered_map<std::string_view, json> parsed_;
};

// A value every loaded copy must agree on; `what()` names it in the error.
template <typename What>
Status Agree(std::optional<json>* slot, const json& value, const What& what) {
  if (!*slot) {
    *slot = value;
  } else if (**slot != value) {
    return Status::Corruption(what() + " differs between ranks");
  }
  return Status::OK();
}

struct ModuleLoaded {
  std::optional<json> module_common, rerun, data;
  // kPerRank data iterators: the saved DP size every loaded object names, and each loaded
  // loader by the saved DP rank that saved it.
  std::optional<json> data_dp_size;
  std::map<int64_t, RankLoaderState> loaders;
  std::map<int64_t, RankRngState> rng;  // saved module-local rank -> state
};

// *out: the common state of the first loaded dict holding a non-empty one; NotFound when none.
Status FindCommonState(const std::vector<ShardedStateDict>& loaded, const json** out) {
  for (const ShardedStateDict& d : loaded) {
    if (d.common->is_object() && !d.common->empty()) {
      *out = &d.common.get();
      return Status::OK();
    }
  }
  return Status::NotFound("no loaded dict holds the checkpoint's common state");
}

// Puts rank r's `tensors` into `a` by the roles of its template `e`; errs where replicas differ.
Status AssembleTensors(int64_t r, const RankEntries& e,
                       const std::vector<const ShardedTensor*>& tensors, Assembly* a) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorRole& role = e.tensor_roles[i];
    const ShardedTensor& t = *tensors[i];
    const int size = DTypeSize(t.spec.dtype);
    if (role.kind == EntryKind::kBucket) {
      for (const BucketPiece& piece : role.pieces) {
        const ParamChunk& ch = e.chunk(piece.chunk);
        for (int64_t k = 0; k < piece.length; ++k) {
          const int64_t index = ch.instance_index[piece.src + k];
          if (!a->Put(role.slot, ch.param, index,
                      GetLE(t.data.data() + (piece.dst + k) * size, size))) {
            return ReplicasDisagree(r, t.spec, index);
          }
        }
      }
      continue;
    }
    const ParamChunk& ch = e.chunk(role.chunk);
    if (role.kind == EntryKind::kOptimStep) {
      if (!a->Put(kSlotStep, ch.param, 0, GetLE(t.data.data(), size))) {
        return ReplicasDisagree(r, t.spec, 0);
      }
      continue;
    }
    for (size_t k = 0; k < ch.instance_index.size(); ++k) {
      if (!a->Put(role.slot, ch.param, ch.instance_index[k],
                  GetLE(t.data.data() + k * size, size))) {
        return ReplicasDisagree(r, t.spec, ch.instance_index[k]);
      }
    }
  }
  return Status::OK();
}

// Adds data iterator object `j` (requested as `spec`) to `g`; errs where its copies differ.
template <typename What>
Status GatherDataIterator(const json& j, const ObjectSpec& spec, const What& what,
                          ModuleLoaded* g) {
  // The run's shared position agrees on every rank; a per-DP-rank loader belongs to the saved DP
  // rank whose object it is (the object's offset).
  DataIteratorState shared;
  int64_t dp_size = 0;
  RankLoaderState loader;
  const Status parsed = DataIteratorRankFromJson(j, &shared, &dp_size, &loader);
  if (!parsed.ok()) return parsed.WithContext(what());
  CKPTSPEC_RETURN_IF_ERROR(Agree(&g->data, DataIteratorStateToJson(shared), what));
  CKPTSPEC_RETURN_IF_ERROR(
      Agree(&g->data_dp_size, json(dp_size), [&] { return what() + " ('dp_size')"; }));
  if (dp_size > 0) {
    const int64_t saved_dp = spec.global_offset.at(0);
    auto [it, inserted] = g->loaders.emplace(saved_dp, loader);
    if (!inserted && !(it->second == loader)) {
      return Status::Corruption(what() + ": DP rank " + std::to_string(saved_dp) +
                                "'s loader differs between its copies");
    }
  }
  return Status::OK();
}

// Adds rank r's `objects` to `g` by the roles of its template `e`; errs where copies differ.
Status GatherObjects(int64_t r, const RankEntries& e,
                     const std::vector<const ShardedObject*>& objects, StoredJsonReader* stored,
                     ModuleLoaded* g) {
  for (size_t i = 0; i < objects.size(); ++i) {
    const ObjectRole& role = e.object_roles[i];
    const ShardedObject& o = *objects[i];
    // The object's name, made only for an error.
    const auto what = [&] {
      return "rank " + std::to_string(r) + " object '" + o.spec.UniqueKey() + "'";
    };
    const json* read = nullptr;
    CKPTSPEC_RETURN_IF_ERROR(stored->Read(o.data, what, &read));
    const json& j = *read;
    switch (role.kind) {
      case EntryKind::kModuleCommon:
        CKPTSPEC_RETURN_IF_ERROR(Agree(&g->module_common, j, what));
        break;
      case EntryKind::kRerun:
        CKPTSPEC_RETURN_IF_ERROR(Agree(&g->rerun, j, what));
        break;
      case EntryKind::kData:
        CKPTSPEC_RETURN_IF_ERROR(GatherDataIterator(j, e.dict.objects[i].spec, what, g));
        break;
      case EntryKind::kSliceIndex: {
        const json* want = nullptr;
        CKPTSPEC_RETURN_IF_ERROR(stored->Read(e.dict.objects[i].data, what, &want));
        if (j != *want) {
          return Status::Corruption(what() +
                                    ": the dp_reshardable slice index differs from this layout's "
                                    "(the bucket layout changed)");
        }
        break;
      }
      case EntryKind::kRng: {
        RankRngState rng;
        const Status parsed = RankRngStateFromJson(j, &rng);
        if (!parsed.ok()) return parsed.WithContext(what());
        for (int64_t s : role.saved_ranks) g->rng[s] = rng;
        break;
      }
      default:
        break;
    }
  }
  return Status::OK();
}

// What every module loaded: each module's assembled tensors and gathered objects, rank by rank.
Status GatherLoaded(const std::vector<ShardedStateDict>& loaded, const HeterogeneousLayout& layout,
                    const std::vector<RankEntries>& templ, StoredJsonReader* stored,
                    std::vector<Assembly>* assembly, std::vector<ModuleLoaded>* got) {
  for (int64_t r = 0; r < layout.world_size(); ++r) {
    const RankEntries& e = templ[r];
    std::vector<const ShardedTensor*> tensors;
    std::vector<const ShardedObject*> objects;
    CKPTSPEC_RETURN_IF_ERROR(Match(r, loaded[r], e, &tensors, &objects));
    CKPTSPEC_RETURN_IF_ERROR(AssembleTensors(r, e, tensors, &(*assembly)[e.module]));
    CKPTSPEC_RETURN_IF_ERROR(GatherObjects(r, e, objects, stored, &(*got)[e.module]));
  }
  return Status::OK();
}

// What one module's rebuild reads: the checkpoint, the request, and what the module loaded.
struct ModuleRebuild {
  size_t m;
  const CheckpointInfo& info;
  const json& common;
  const HeterogeneousLayout& layout;
  const TrainingConfig& config;
  const LoadFlags& flags;
  bool load_optim;
  const Assembly& assembly;
  const ModuleLoaded& got;
  const ModuleLayout& was() const { return info.layout.modules()[m]; }
};

// The config of module m's saved view: the saved DP size, dtypes, RNG ranks, freezing family.
TrainingConfig SavedViewConfig(const ModuleRebuild& in, DType held) {
  const ModuleLayout& was = in.was();
  TrainingConfig vcfg = in.config;
  vcfg.model.params_dtype = held;
  // The view's data config only has to carry the saved DP size (L0); its batch sizes are
  // placeholders that keep it valid (the resumed iterator uses the new config's).
  vcfg.data.dp_size = was.layout.dp();
  vcfg.data.micro_batch_size = 1;
  vcfg.data.global_batch_size = was.layout.dp();
  vcfg.data.sampler = DataSampler::kGlobal;  // the loaded objects say which sampler saved them
  vcfg.data_parallel_random_init = in.info.data_parallel_random_init[in.m];
  vcfg.rng_saving = in.info.rng_saving[in.m];
  // The saved optimizer's freezing family (the templates refused a change when it loads).
  if (in.load_optim) {
    vcfg.optimizer.freeze_family =
        in.info.optimizer_state_params[in.m] ? FreezeFamily::kTorchOptim : FreezeFamily::kMegatron;
  }
  vcfg.ranks.clear();
  for (const auto& kv : in.got.rng) vcfg.ranks.push_back(was.layout.Coords(kv.first));
  if (vcfg.ranks.empty()) {
    RankCoords none;  // matches no rank: nothing was loaded
    none.tp = -1;
    vcfg.ranks.push_back(none);
  }
  return vcfg;
}

// Fills parameter p's optimizer slots of `view` from `a`; NotFound where an element is missing.
Status FillOptimizerSlots(const Assembly& a, size_t p, const std::string& name, bool mixed,
                          DType held, TrainingState* view) {
  ParamState& ps = view->params[p];
  if (!HasOptimizerState(ps)) CreateOptimizerState(view, static_cast<int>(p));
  CKPTSPEC_RETURN_IF_ERROR(a.Complete(kSlotExpAvg, static_cast<int>(p), "exp_avg of " + name));
  CKPTSPEC_RETURN_IF_ERROR(a.Complete(kSlotExpAvgSq, static_cast<int>(p), "exp_avg_sq of " + name));
  CKPTSPEC_RETURN_IF_ERROR(a.Complete(kSlotStep, static_cast<int>(p), "step of " + name));
  if (mixed)
    CKPTSPEC_RETURN_IF_ERROR(
        a.Complete(kSlotMaster, static_cast<int>(p), "fp32 master of " + name));
  // The saved master value (an fp32 checkpoint's: its weights, held in fp32) is kept as the
  // view's main copy, also where the view's held dtype is fp32 (L1 reads it by MasterValue).
  if (mixed) ps.main.resize(ps.model.size());
  for (size_t e = 0; e < ps.model.size(); ++e) {
    ps.exp_avg[e] = BitsToFloat(a.values(kSlotExpAvg, static_cast<int>(p))[e]);
    ps.exp_avg_sq[e] = BitsToFloat(a.values(kSlotExpAvgSq, static_cast<int>(p))[e]);
    const float master = mixed ? BitsToFloat(a.values(kSlotMaster, static_cast<int>(p))[e])
                               : static_cast<float>(DecodeToDouble(held, ps.model[e]));
    if (!ps.main.empty()) ps.main[e] = master;
    if (!ps.offload.empty()) ps.offload[e] = master;
  }
  ps.step = static_cast<int64_t>(a.values(kSlotStep, static_cast<int>(p))[0]);
  return Status::OK();
}

// Fills the view's weights, and when they load the optimizer slots of the parameters saving any.
Status FillParams(const ModuleRebuild& in, const TrainingState& structure, DType saved_dtype,
                  DType held, TrainingState* view) {
  const Assembly& a = in.assembly;
  const std::optional<std::vector<int64_t>>& saved_with_state =
      in.info.optimizer_state_params[in.m];
  // The checkpoint holds an fp32 main copy (fp32_param) beside 16-bit weights.
  const bool mixed = saved_dtype != DType::kFloat32;
  for (size_t p = 0; p < structure.specs.size(); ++p) {
    const std::string& name = structure.specs[p].name;
    CKPTSPEC_RETURN_IF_ERROR(
        a.Complete(kSlotModel, static_cast<int>(p), "model weight of " + name));
    const auto& mv = a.values(kSlotModel, static_cast<int>(p));
    for (size_t e = 0; e < mv.size(); ++e) view->params[p].model[e] = static_cast<uint32_t>(mv[e]);
    const bool saved_state =
        saved_with_state ? std::binary_search(saved_with_state->begin(), saved_with_state->end(),
                                              static_cast<int64_t>(p))
                         : !view->params[p].frozen;
    if (!in.load_optim || !saved_state) continue;
    CKPTSPEC_RETURN_IF_ERROR(FillOptimizerSlots(a, p, name, mixed, held, view));
  }
  return Status::OK();
}

// Reads the view's optimizer and scheduler state from the module's (or the common) common state.
Status ReadOptimizerCommon(const ModuleRebuild& in, const std::string& label, TrainingState* view) {
  const json* mc = &in.common;
  if (!in.was().name.empty()) {
    if (!in.got.module_common)
      return Status::NotFound(label + ": no optimizer common_state was loaded");
    mc = &*in.got.module_common;
  }
  if (!mc->contains("optimizer") || !mc->contains("opt_param_scheduler")) {
    return Status::Corruption(
        label + ": optimizer common state lacks 'optimizer' or 'opt_param_scheduler'");
  }
  CKPTSPEC_RETURN_IF_ERROR(
      SubOptimizersFromJson((*mc)["optimizer"], &view->optimizers).WithContext(label));
  CKPTSPEC_RETURN_IF_ERROR(
      CheckGroupParameters(view->optimizers, view->params.size()).WithContext(label));
  CKPTSPEC_RETURN_IF_ERROR(
      SchedulerStateFromJson((*mc)["opt_param_scheduler"], in.config.scheduler, &view->scheduler)
          .WithContext(label));
  return Status::OK();
}

// Reads the view's rerun machine: the common head, with the rank payload when it was loaded.
Status ReadRerunMachine(const ModuleRebuild& in, const std::string& label, TrainingState* view) {
  const json& common = in.common;
  if (!common.contains("rerun_state_machine"))
    return Status::Corruption("common state lacks 'rerun_state_machine'");
  json payload;
  if (in.got.rerun) {
    payload = *in.got.rerun;
    for (const char* f : {"mode", "state", "current_iteration"}) {
      if (!payload.contains(f) || payload[f] != common["rerun_state_machine"][f]) {
        return Status::Corruption(label + ": rerun payload '" + f +
                                  "' differs from the common state's");
      }
    }
  } else {
    CKPTSPEC_RETURN_IF_ERROR(
        CheckpointPayload(NewRerunStateMachine(RerunMode::kValidateResults, 0), &payload));
    for (const char* f : {"mode", "state", "current_iteration"})
      payload[f] = common["rerun_state_machine"][f];
  }
  return PayloadFromJson(payload, &view->rerun).WithContext(label);
}

// Reads the view's data iterator, with its per-DP-rank loaders, when one was loaded.
Status ReadDataIterator(const ModuleRebuild& in, const std::string& label, TrainingState* view) {
  if (!in.got.data) return Status::OK();
  CKPTSPEC_RETURN_IF_ERROR(DataIteratorStateFromJson(*in.got.data, &view->data).WithContext(label));
  // Per-DP-rank loaders: one slot per saved DP rank. A load under another DP size reads only
  // some of them (the others stay default); L9 refuses that DP change before it looks at them.
  const int64_t dp_size = in.got.data_dp_size ? in.got.data_dp_size->get<int64_t>() : 0;
  if (dp_size > 0) {
    const Layout& was = in.was().layout;
    if (dp_size != was.dp()) {
      return Status::Corruption(label + ": the data iterator objects name DP size " +
                                std::to_string(dp_size) + "; the checkpoint's layout has " +
                                std::to_string(was.dp()));
    }
    view->data.loaders.assign(static_cast<size_t>(dp_size), RankLoaderState());
    for (const auto& [saved_dp, loader] : in.got.loaders) {
      view->data.loaders[static_cast<size_t>(saved_dp)] = loader;
    }
  }
  return Status::OK();
}

// The state the load rules (ExpectedStateAfterLoad) give module m from its saved view.
Status ExpectAfterLoad(const ModuleRebuild& in, DType saved_dtype, const std::string& label,
                       TrainingState view, TrainingState* out) {
  const ModuleLayout& was = in.was();
  CheckpointDescriptor ckpt;
  ckpt.state = std::move(view);
  ckpt.layout = was.layout;
  ckpt.optimizer_format = in.info.sharding.optimizer_format;
  ckpt.run_world_size = in.info.layout.world_size();
  ckpt.first_rank = was.first_rank;
  ckpt.has_rng = true;
  ckpt.saved_params_dtype = saved_dtype;
  ResumeRequest req;
  req.config = in.config;
  req.layout = in.layout.modules()[in.m].layout;
  req.flags = in.flags;
  req.run_world_size = in.layout.world_size();
  req.first_rank = in.layout.modules()[in.m].first_rank;
  return ExpectedStateAfterLoad(ckpt, req, out).WithContext(label);
}

// Module m's state after the load: the saved view rebuilt from what it loaded, by the load rules.
Status RebuildModule(const ModuleRebuild& in, const std::vector<TrainingConfig>& configs,
                     const TrainingState& structure, TrainingState* out) {
  const ModuleLayout& was = in.was();
  const std::string label = "module '" + was.name + "'";
  // The weights were saved in `saved_dtype` and requested (held) in `held`.
  const DType saved_dtype = SavedParamsDtype(in.info, configs, in.m);
  const DType held = RequestedWeightDtype(
      saved_dtype, in.config.model.params_dtype,
      StateClassesToLoad(in.flags, in.config, was.layout, in.layout.modules()[in.m].layout)
          .optimizer);
  TrainingState view;
  CKPTSPEC_RETURN_IF_ERROR(
      InitialTrainingState(SavedViewConfig(in, held), &view).WithContext(label + " saved view"));
  size_t ri = 0;
  for (const auto& kv : in.got.rng) view.rng[ri++] = kv.second;
  if (!in.common["iteration"].is_number_integer())
    return Status::Corruption("common 'iteration' is not an integer");
  view.iteration = in.common["iteration"].get<int64_t>();
  CKPTSPEC_RETURN_IF_ERROR(FillParams(in, structure, saved_dtype, held, &view));
  if (in.load_optim) CKPTSPEC_RETURN_IF_ERROR(ReadOptimizerCommon(in, label, &view));
  CKPTSPEC_RETURN_IF_ERROR(ReadRerunMachine(in, label, &view));
  CKPTSPEC_RETURN_IF_ERROR(ReadDataIterator(in, label, &view));
  return ExpectAfterLoad(in, saved_dtype, label, std::move(view), out);
}

}  // namespace

Status RebuildTrainingState(const std::vector<ShardedStateDict>& loaded,
                            const HeterogeneousLayout& layout,
                            const std::vector<TrainingConfig>& configs, const LoadFlags& flags,
                            std::vector<TrainingState>* out) {
  if (static_cast<int64_t>(loaded.size()) != layout.world_size()) {
    return Status::InvalidArgument(std::to_string(loaded.size()) + " loaded dicts for a world of " +
                                   std::to_string(layout.world_size()));
  }
  const json* common = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(FindCommonState(loaded, &common));
  CheckpointInfo info;
  CKPTSPEC_RETURN_IF_ERROR(ReadCheckpointInfo(*common, &info));
  std::vector<RankEntries> templ;
  StatePlan plan;  // its structure(m): InitialTrainingState(configs[m])
  CKPTSPEC_RETURN_IF_ERROR(BuildTemplateEntries(layout, configs, info, flags, &templ, &plan));

  const size_t nmod = configs.size();
  std::vector<Assembly> assembly;
  for (size_t m = 0; m < nmod; ++m) assembly.emplace_back(plan.structure(static_cast<int>(m)));
  std::vector<ModuleLoaded> got(nmod);
  StoredJsonReader stored;  // over `loaded` and `templ`, which outlive it
  CKPTSPEC_RETURN_IF_ERROR(GatherLoaded(loaded, layout, templ, &stored, &assembly, &got));

  const bool load_optim = !flags.finetune && !flags.no_load_optim;
  std::vector<TrainingState> result;
  for (size_t m = 0; m < nmod; ++m) {
    const ModuleRebuild in{m,     info,       *common,     layout, configs[m],
                           flags, load_optim, assembly[m], got[m]};
    TrainingState s;
    CKPTSPEC_RETURN_IF_ERROR(RebuildModule(in, configs, plan.structure(static_cast<int>(m)), &s));
    result.push_back(std::move(s));
  }
  *out = std::move(result);
  return Status::OK();
}

Status RebuildTrainingState(const std::vector<ShardedStateDict>& loaded, const Layout& layout,
                            const TrainingConfig& config, const LoadFlags& flags,
                            TrainingState* out) {
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(RebuildTrainingState(
      loaded, HeterogeneousLayout::Single(layout, config.model.name), {config}, flags, &states));
  *out = std::move(states[0]);
  return Status::OK();
}

}  // namespace ckptspec
