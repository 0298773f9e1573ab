#include "model/state_sharding.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/json_fields.h"
#include "model/rerun_state_machine.h"
#include "model/state_common.h"
#include "model/state_entries.h"

namespace ckptspec {

namespace {

// Megatron's checkpoint_version.
constexpr double kCheckpointVersion = 3.0;

nlohmann::json RerunHead(const RerunStateMachine& m) {
  return nlohmann::json{{"mode", RerunModeName(m.mode)},
                        {"state", static_cast<int>(m.state)},
                        {"current_iteration", m.current_iteration}};
}

}  // namespace

const char* OptimizerFormatName(OptimizerFormat f) {
  return f == OptimizerFormat::kDpReshardable ? "dp_reshardable" : "fully_reshardable";
}

bool ParseOptimizerFormat(const std::string& name, OptimizerFormat* out) {
  for (OptimizerFormat f : {OptimizerFormat::kFullyReshardable, OptimizerFormat::kDpReshardable}) {
    if (name == OptimizerFormatName(f)) {
      *out = f;
      return true;
    }
  }
  return false;
}

std::vector<RankCoords> RankCoordsOf(const Layout& layout) {
  std::vector<RankCoords> out;
  out.reserve(static_cast<size_t>(layout.world_size()));
  for (int64_t r = 0; r < layout.world_size(); ++r) out.push_back(layout.Coords(r));
  return out;
}

Status ShardTrainingState(const HeterogeneousLayout& layout,
                          const std::vector<TrainingState>& states, const ShardingConfig& sharding,
                          std::vector<ShardedStateDict>* out) {
  std::vector<TrainingConfig> configs;
  for (const TrainingState& s : states) configs.push_back(s.config);
  StatePlan plan;
  CKPTSPEC_RETURN_IF_ERROR(StatePlan::Make(layout, configs, sharding, &plan));
  for (size_t m = 0; m < states.size(); ++m) {
    const std::string label = "module '" + layout.modules()[m].name + "'";
    const TrainingState& s = states[m];
    if (s.config.optimizer.freeze_family == FreezeFamily::kTorchOptim) {
      CKPTSPEC_RETURN_IF_ERROR(
          plan.SetOptimizerState(static_cast<int>(m), OptimizerStatePresence(s))
              .WithContext(label));
    }
    const TrainingState& structure = plan.structure(static_cast<int>(m));
    if (s.params.size() != structure.params.size() || s.specs.size() != structure.specs.size()) {
      return Status::InvalidArgument(label + ": the state holds " +
                                     std::to_string(s.params.size()) + " parameters, its config " +
                                     std::to_string(structure.params.size()));
    }
    for (size_t p = 0; p < s.params.size(); ++p) {
      if (s.params[p].frozen != structure.params[p].frozen) {
        return Status::InvalidArgument(
            label + ": parameter " + s.specs[p].name +
            " is frozen in the state but not in its config (or the reverse)");
      }
    }
    if (s.iteration != states[0].iteration || RerunHead(s.rerun) != RerunHead(states[0].rerun)) {
      return Status::InvalidArgument(label + ": iteration or rerun state differs from module '" +
                                     layout.modules()[0].name +
                                     "' (one training loop drives all modules)");
    }
  }
  nlohmann::json common;
  common["checkpoint_version"] = kCheckpointVersion;
  common["iteration"] = states.empty() ? 0 : states[0].iteration;
  common["parallel_layout"] = HeterogeneousLayoutToJson(layout);
  common["optimizer_sharding"] = {
      {"param_state_sharding_type", OptimizerFormatName(sharding.optimizer_format)},
      {"bucket_size", sharding.buffers.bucket_size},
      {"param_alignment", sharding.buffers.param_alignment},
      {"chained_avoid_prefix", sharding.chained_avoid_prefix}};
  bool any_torch_optim = false;
  nlohmann::json state_params = nlohmann::json::array();
  for (const TrainingState& s : states) {
    if (s.config.optimizer.freeze_family != FreezeFamily::kTorchOptim) {
      state_params.push_back(nullptr);
      continue;
    }
    any_torch_optim = true;
    nlohmann::json with_state = nlohmann::json::array();
    for (size_t p = 0; p < s.params.size(); ++p) {
      if (HasOptimizerState(s.params[p])) with_state.push_back(p);
    }
    state_params.push_back(std::move(with_state));
  }
  // Written only when needed: checkpoints of the megatron family keep their older bytes.
  if (any_torch_optim) common["optimizer_state_params"] = state_params;
  nlohmann::json dpri = nlohmann::json::array();
  for (const TrainingState& s : states) dpri.push_back(s.config.data_parallel_random_init);
  common["data_parallel_random_init"] = dpri;
  // The dtype of each module's model weights, for a load under another (L1).
  nlohmann::json params_dtype = nlohmann::json::array();
  for (const TrainingState& s : states)
    params_dtype.push_back(DTypeName(s.config.model.params_dtype));
  common["params_dtype"] = std::move(params_dtype);
  // Written only when a module saves its RNG rank-local: other checkpoints keep their bytes.
  nlohmann::json rng_saving = nlohmann::json::array();
  bool any_rank_local = false;
  for (const TrainingState& s : states) {
    rng_saving.push_back(RngSavingName(s.config.rng_saving));
    any_rank_local |= s.config.rng_saving == RngSaving::kRankLocal;
  }
  if (any_rank_local) common["rng_saving"] = std::move(rng_saving);
  if (!states.empty()) common["rerun_state_machine"] = RerunHead(states[0].rerun);
  if (states.size() == 1 && layout.modules()[0].name.empty()) {
    const nlohmann::json mc = StatePlan::ModuleCommon(states[0]);
    common["optimizer"] = mc["optimizer"];
    common["opt_param_scheduler"] = mc["opt_param_scheduler"];
  }
  const SharedJson shared_common = std::move(common);  // every rank's dict holds this one tree
  std::vector<ShardedStateDict> dicts;
  dicts.reserve(static_cast<size_t>(layout.world_size()));
  std::vector<ModulePayloads> payloads(states.size());  // per module, for its state
  for (int64_t r = 0; r < layout.world_size(); ++r) {
    const TrainingState& state = states[layout.ModuleOf(r)];
    // Megatron emits the rerun object (a sentinel in steady state) unless the mode is disabled
    // (docs/SEMANTICS.md §3, PR #4448); load templates never request it then, so saving it anyway
    // made it a "missing" key that refused every raise_all resume.
    EntryFilter filter;
    filter.rerun = state.config.rerun_mode != RerunMode::kDisabled;
    RankEntries e;
    CKPTSPEC_RETURN_IF_ERROR(plan.BuildRank(r, filter, &state, &e, &payloads[layout.ModuleOf(r)])
                                 .WithContext("rank " + std::to_string(r)));
    e.dict.common = shared_common;
    dicts.push_back(std::move(e.dict));
  }
  *out = std::move(dicts);
  return Status::OK();
}

Status ShardTrainingState(const Layout& layout, const TrainingState& state,
                          const ShardingConfig& sharding, std::vector<ShardedStateDict>* out) {
  return ShardTrainingState(HeterogeneousLayout::Single(layout, state.config.model.name), {state},
                            sharding, out);
}

namespace {

// A params dtype a checkpoint may name: fp32, bf16 or fp16.
bool ParseParamsDtype(const std::string& name, DType* out) {
  DType d = DType::kFloat32;
  if (!ParseDType(name, &d) ||
      (d != DType::kFloat32 && d != DType::kBFloat16 && d != DType::kFloat16)) {
    return false;
  }
  *out = d;
  return true;
}

// The optional "optimizer_state_params" of each module: null, or parameter indices below 2^31 (a
// model's parameter count is checked by the templates), each above the previous one.
Status ReadOptimizerStateParams(const JsonField& list, std::optional<std::vector<int64_t>>* out) {
  if (list.is_null()) return Status::OK();
  std::vector<int64_t> indices;
  CKPTSPEC_RETURN_IF_ERROR(list.ForEachElement([&indices](const JsonField& v) {
    int64_t index = 0;
    CKPTSPEC_RETURN_IF_ERROR(v.GetInt64(0, (int64_t{1} << 31) - 1, &index));
    if (!indices.empty() && index <= indices.back()) {
      return v.Expected("a parameter index above the previous one");
    }
    indices.push_back(index);
    return Status::OK();
  }));
  *out = std::move(indices);
  return Status::OK();
}

Status ReadCheckpointInfo(const JsonField& common, CheckpointInfo* out) {
  CheckpointInfo info;
  CKPTSPEC_RETURN_IF_ERROR(common.ExpectObject());
  CKPTSPEC_RETURN_IF_ERROR(
      HeterogeneousLayoutFromJson(common.Member("parallel_layout"), &info.layout));
  const size_t modules = info.layout.modules().size();
  const JsonField sharding = common.Member("optimizer_sharding");
  CKPTSPEC_RETURN_IF_ERROR(sharding.Member("param_state_sharding_type")
                               .GetEnum(ParseOptimizerFormat, &info.sharding.optimizer_format));
  CKPTSPEC_RETURN_IF_ERROR(
      sharding.Member("bucket_size").GetInt64(&info.sharding.buffers.bucket_size));
  CKPTSPEC_RETURN_IF_ERROR(
      sharding.Member("param_alignment").GetInt64(&info.sharding.buffers.param_alignment));
  CKPTSPEC_RETURN_IF_ERROR(
      sharding.Member("chained_avoid_prefix").GetBool(&info.sharding.chained_avoid_prefix));
  const JsonField dpri = common.Member("data_parallel_random_init");
  CKPTSPEC_RETURN_IF_ERROR(dpri.ExpectArrayOfSize(modules));
  info.data_parallel_random_init.assign(modules, false);
  for (size_t m = 0; m < modules; ++m) {
    bool random_init = false;
    CKPTSPEC_RETURN_IF_ERROR(dpri.Element(m).GetBool(&random_init));
    info.data_parallel_random_init[m] = random_init;
  }
  // Optional, one entry per module each.
  const JsonField rng_saving = common.OptionalMember("rng_saving");
  const JsonField params_dtype = common.OptionalMember("params_dtype");
  const JsonField state_params = common.OptionalMember("optimizer_state_params");
  info.rng_saving.assign(modules, RngSaving::kSharded);
  info.params_dtype.assign(modules, std::nullopt);
  info.optimizer_state_params.assign(modules, std::nullopt);
  for (const JsonField* list : {&rng_saving, &params_dtype, &state_params}) {
    CKPTSPEC_RETURN_IF_ERROR(list->ExpectArrayOfSize(modules));
  }
  for (size_t m = 0; m < rng_saving.size(); ++m) {
    CKPTSPEC_RETURN_IF_ERROR(rng_saving.Element(m).GetEnum(ParseRngSaving, &info.rng_saving[m]));
  }
  for (size_t m = 0; m < params_dtype.size(); ++m) {
    DType d = DType::kFloat32;
    CKPTSPEC_RETURN_IF_ERROR(params_dtype.Element(m).GetEnum(ParseParamsDtype, &d));
    info.params_dtype[m] = d;
  }
  for (size_t m = 0; m < state_params.size(); ++m) {
    CKPTSPEC_RETURN_IF_ERROR(
        ReadOptimizerStateParams(state_params.Element(m), &info.optimizer_state_params[m]));
  }
  info.common = common.value();
  *out = std::move(info);
  return Status::OK();
}

}  // namespace

Status ReadCheckpointInfo(const nlohmann::json& common, CheckpointInfo* out) {
  return AsCorruption(ReadCheckpointInfo(JsonField(common, "common"), out));
}

DType RequestedWeightDtype(DType saved, DType now, bool optimizer_loads) {
  return saved == DType::kFloat32 && now != DType::kFloat32 && optimizer_loads ? DType::kFloat32
                                                                               : now;
}

DType SavedParamsDtype(const CheckpointInfo& saved, const std::vector<TrainingConfig>& configs,
                       size_t module) {
  return module < saved.params_dtype.size() && saved.params_dtype[module]
             ? *saved.params_dtype[module]
             : configs[module].model.params_dtype;
}

namespace {

// What BuildTemplateEntries reads: the run's layout and configs, the checkpoint, the load flags.
struct TemplateInputs {
  const HeterogeneousLayout& layout;
  const std::vector<TrainingConfig>& configs;
  const CheckpointInfo& saved;
  const LoadFlags& flags;
  const ModuleLayout& now(size_t m) const { return layout.modules()[m]; }
  const ModuleLayout& was(size_t m) const { return saved.layout.modules()[m]; }
  // The state classes module m loads (L3-L9).
  LoadedStateClasses load(size_t m) const {
    return StateClassesToLoad(flags, configs[m], was(m).layout, now(m).layout);
  }
};

// InvalidArgument unless the run has one config per layout module and the checkpoint's modules.
Status CheckModuleCounts(const TemplateInputs& in) {
  const size_t now_modules = in.layout.modules().size();
  const size_t was_modules = in.saved.layout.modules().size();
  if (in.configs.size() != now_modules) {
    return Status::InvalidArgument(std::to_string(in.configs.size()) + " configs for " +
                                   std::to_string(now_modules) + " layout modules");
  }
  if (now_modules != was_modules) {
    return Status::InvalidArgument("the checkpoint has " + std::to_string(was_modules) +
                                   " modules, the run " + std::to_string(now_modules));
  }
  return Status::OK();
}

// Checks module m's optimizer state may load as saved, then plans the state it requests.
Status PlanOptimizerLoad(const TemplateInputs& in, size_t m,
                         const std::vector<TrainingConfig>& saved_configs, StatePlan* plan) {
  if (!in.load(m).optimizer) return Status::OK();
  const std::string label = "module '" + in.now(m).name + "'";
  const OptimizerFormat format = in.saved.sharding.optimizer_format;
  CKPTSPEC_RETURN_IF_ERROR(
      CheckOptimizerFormatChange(format, in.was(m).layout, in.now(m).layout).WithContext(label));
  CKPTSPEC_RETURN_IF_ERROR(CheckOptimizerDtypeChange(format, saved_configs[m].model.params_dtype,
                                                     in.configs[m].model.params_dtype)
                               .WithContext(label));
  const std::optional<std::vector<int64_t>>& with_state = in.saved.optimizer_state_params[m];
  CKPTSPEC_RETURN_IF_ERROR(
      CheckFreezeFamily(with_state ? FreezeFamily::kTorchOptim : FreezeFamily::kMegatron,
                        in.configs[m].optimizer.freeze_family)
          .WithContext(label));
  if (!with_state) return Status::OK();
  // torch_optim: request the state of exactly the parameters that saved one.
  std::vector<bool> present(plan->structure(static_cast<int>(m)).params.size(), false);
  for (int64_t p : *with_state) {
    if (p >= static_cast<int64_t>(present.size())) {
      return Status::Corruption(label + ": optimizer_state_params names parameter " +
                                std::to_string(p) + " of a model with " +
                                std::to_string(present.size()));
    }
    present[p] = true;
  }
  return plan->SetOptimizerState(static_cast<int>(m), present);
}

// Requests the model weights of `e` in `dtype` (zeroed data of that dtype's size).
void RequestWeightsIn(DType dtype, RankEntries* e) {
  for (size_t i = 0; i < e->dict.tensors.size(); ++i) {
    ShardedTensor& t = e->dict.tensors[i];
    if (e->tensor_roles[i].kind != EntryKind::kModel || t.spec.dtype == dtype) continue;
    t.spec.dtype = dtype;
    t.data.assign(static_cast<size_t>(Volume(t.spec.local_shape)) * DTypeSize(t.spec.dtype), 0);
  }
}

// Adds to rank r's `e` (of module m) the saved data iterator object it reads (L9).
void RequestDataIterator(const TemplateInputs& in, size_t m, int64_t r, RankEntries* e) {
  // L9: a rank reads its own DP rank's object where that exists, else the one its DP rank
  // wraps to. Under the global sampler every saved DP rank holds the same position of the
  // global sequence (the module's ranks must agree); per-DP-rank loaders load only under the
  // saved DP size, where every rank reads its own (under another, the rebuild refuses). The
  // ranks that wrap request it as further replicas (one main replica per object).
  const Layout& now = in.now(m).layout;
  const Layout& was = in.was(m).layout;
  const RankCoords c = now.Coords(in.layout.LocalRank(r));
  const int64_t wrap = c.dp / was.dp();
  ShardedObject o;
  o.spec = StatePlan::DataIteratorObjectSpec(in.now(m).name, was, c.dp % was.dp(),
                                             {c.pp, c.tp, c.cp + wrap * now.cp()});
  e->dict.objects.push_back(std::move(o));
  e->object_roles.push_back(ObjectRole{EntryKind::kData, {}});
}

// Adds to rank r's `e` (of module m) the saved RNG object it loads, if any (L7).
void RequestRng(const TemplateInputs& in, size_t m, int64_t r, RankEntries* e) {
  const Layout& now = in.now(m).layout;
  const Layout& was = in.was(m).layout;
  // L7: a rank-local RNG only where each rank keeps its global rank, its own value.
  const bool rank_local_rng = in.saved.rng_saving[m] == RngSaving::kRankLocal;
  if (rank_local_rng && !RankLocalRngLoads(was, in.was(m).first_rank, now, in.now(m).first_rank)) {
    return;
  }
  const int s = MatchRngRank(RankCoordsOf(was), now.Coords(in.layout.LocalRank(r)),
                             in.configs[m].data_parallel_random_init);
  if (s < 0) return;
  ObjectRole role;
  role.kind = EntryKind::kRng;
  ShardedObject o;
  o.spec = StatePlan::RngObjectSpec(in.now(m).name, was, in.saved.rng_saving[m],
                                    in.saved.data_parallel_random_init[m], s, &role.saved_ranks);
  e->dict.objects.push_back(std::move(o));
  e->object_roles.push_back(std::move(role));
}

// Rank r's template: its planned entries, weights in `weight_dtype`, data iterator and RNG objects.
Status RankTemplate(const TemplateInputs& in, const StatePlan& plan, DType weight_dtype, int64_t r,
                    RankEntries* out) {
  const int m = in.layout.ModuleOf(r);
  const Layout& now = in.now(m).layout;
  const Layout& was = in.was(m).layout;
  const bool same_dp = now.dp() == was.dp() && now.cp() == was.cp() && now.edp() == was.edp();
  const LoadedStateClasses load = StateClassesToLoad(in.flags, in.configs[m], was, now);
  EntryFilter f;
  f.optimizer = load.optimizer;
  f.slice_index = same_dp;
  // RNG and data iterator are requested below, by the saved layout's object specs.
  f.rng = false;
  f.data = false;
  // Requested only where it loads: a layout change skips the rerun payload (or errs) (L8), so
  // the templates never ask for what the load would not take.
  f.rerun = load.rerun && in.layout.world_size() == in.saved.layout.world_size() &&
            now.world_size() == was.world_size() && now.tp() == was.tp() && now.pp() == was.pp() &&
            now.dp() == was.dp();
  RankEntries e;
  CKPTSPEC_RETURN_IF_ERROR(
      plan.BuildRank(r, f, nullptr, &e).WithContext("rank " + std::to_string(r)));
  RequestWeightsIn(weight_dtype, &e);
  if (load.data) RequestDataIterator(in, m, r, &e);
  if (load.rng) RequestRng(in, m, r, &e);
  *out = std::move(e);
  return Status::OK();
}

// Makes every rank but the lowest that requests one saved RNG state request it as a replica.
void OneMainReplicaPerRng(std::vector<RankEntries>* all) {
  // Several ranks may take one saved RNG state (a changed DP or CP): one of them, the lowest rank,
  // asks for it as the main replica and the others as replicas, so that the templates have one
  // main replica per object, as a checkpointer validates them (megatron-core refuses "Duplicate
  // ShardedObject keys" on load too).
  std::map<std::string, int64_t> requests;
  for (RankEntries& e : *all) {
    for (size_t i = 0; i < e.dict.objects.size(); ++i) {
      if (e.object_roles[i].kind != EntryKind::kRng) continue;
      ObjectSpec& spec = e.dict.objects[i].spec;
      if (IsRankLocal(spec)) continue;  // each rank's own
      const int64_t earlier = requests[spec.UniqueKey()]++;
      if (earlier > 0 && IsMainReplica(spec.replica_id)) spec.replica_id = {earlier};
    }
  }
}

// Has each module's first rank request the saved data iterator and RNG shards no rank requests.
void RequestUntakenShards(const TemplateInputs& in, std::vector<RankEntries>* all) {
  // A DP-sharded object is requested whole: the saved shards no rank needs (a smaller DP size)
  // go to the module's first rank as main replicas. The rebuild reads a data iterator shard as
  // the others (its loader joins the view) and only parses an RNG shard no rank takes.
  std::set<std::string> requested;
  for (const RankEntries& e : *all) {
    for (const ShardedObject& o : e.dict.objects) requested.insert(o.spec.UniqueKey());
  }
  for (size_t m = 0; m < in.layout.modules().size(); ++m) {
    const Layout& was = in.was(m).layout;
    const LoadedStateClasses load = in.load(m);
    RankEntries& first = (*all)[static_cast<size_t>(in.now(m).first_rank)];
    auto request = [&](ShardedObject o, ObjectRole role) {
      if (!requested.insert(o.spec.UniqueKey()).second) return;
      first.dict.objects.push_back(std::move(o));
      first.object_roles.push_back(std::move(role));
    };
    if (load.data) {
      for (int64_t d = 0; d < was.dp(); ++d) {
        ShardedObject o;
        o.spec = StatePlan::DataIteratorObjectSpec(in.now(m).name, was, d, {0, 0, 0});
        request(std::move(o), ObjectRole{EntryKind::kData, {}});
      }
    }
    if (load.rng && in.saved.rng_saving[m] == RngSaving::kSharded) {
      for (int64_t r = 0; r < was.world_size(); ++r) {
        std::vector<int64_t> holders;
        ShardedObject o;
        o.spec = StatePlan::RngObjectSpec(in.now(m).name, was, RngSaving::kSharded,
                                          in.saved.data_parallel_random_init[m], r, &holders);
        o.spec.replica_id = {0};  // the one request of a shard no rank takes is its main replica
        request(std::move(o), ObjectRole{EntryKind::kRng, {}});
      }
    }
  }
}

// Has the first rank requesting a rerun shard read every rerun shard no rank requests.
void RequestUnreadRerunShards(int64_t saved_world, std::vector<RankEntries>* all) {
  // The rerun object is sharded over the run's world, and L8 has each module decide whether its
  // ranks request their shards: when some module does and another does not (a heterogeneous
  // layout where only one module changed), the shards no rank requests go to the first
  // requesting rank, read and not used.
  std::set<int64_t> rerun_offsets;
  RankEntries* rerun_reader = nullptr;
  for (RankEntries& e : *all) {
    for (size_t i = 0; i < e.dict.objects.size(); ++i) {
      if (e.object_roles[i].kind != EntryKind::kRerun) continue;
      rerun_offsets.insert(e.dict.objects[i].spec.global_offset.at(0));
      if (rerun_reader == nullptr) rerun_reader = &e;
    }
  }
  if (rerun_reader == nullptr) return;
  for (int64_t r = 0; r < saved_world; ++r) {
    if (rerun_offsets.count(r)) continue;
    ShardedObject o;
    o.spec = StatePlan::RerunObjectSpec(saved_world, r);
    rerun_reader->dict.objects.push_back(std::move(o));
    rerun_reader->object_roles.push_back(ObjectRole{EntryKind::kReadWhole, {}});
  }
}

}  // namespace

Status BuildTemplateEntries(const HeterogeneousLayout& layout,
                            const std::vector<TrainingConfig>& configs, const CheckpointInfo& saved,
                            const LoadFlags& flags, std::vector<RankEntries>* out,
                            StatePlan* plan_out) {
  const TemplateInputs in{layout, configs, saved, flags};
  CKPTSPEC_RETURN_IF_ERROR(CheckModuleCounts(in));
  // The entries are the checkpoint's (its optimizer holds an fp32 main copy, its buffers are keyed
  // by its dtype): planned in the checkpoint's params dtype, the model weights then requested in
  // the dtype L1 reads them in.
  std::vector<TrainingConfig> saved_configs = configs;
  std::vector<DType> weight_dtype(configs.size());
  for (size_t m = 0; m < configs.size(); ++m) {
    saved_configs[m].model.params_dtype = SavedParamsDtype(saved, configs, m);
    weight_dtype[m] = RequestedWeightDtype(saved_configs[m].model.params_dtype,
                                           configs[m].model.params_dtype, in.load(m).optimizer);
  }
  StatePlan plan;
  CKPTSPEC_RETURN_IF_ERROR(StatePlan::Make(layout, saved_configs, saved.sharding, &plan));
  for (size_t m = 0; m < layout.modules().size(); ++m) {
    if (in.now(m).name != in.was(m).name) {
      return Status::InvalidArgument("module " + std::to_string(m) + " is '" + in.now(m).name +
                                     "', the checkpoint's '" + in.was(m).name + "'");
    }
    CKPTSPEC_RETURN_IF_ERROR(PlanOptimizerLoad(in, m, saved_configs, &plan));
  }
  std::vector<RankEntries> all;
  for (int64_t r = 0; r < layout.world_size(); ++r) {
    RankEntries e;
    CKPTSPEC_RETURN_IF_ERROR(RankTemplate(in, plan, weight_dtype[layout.ModuleOf(r)], r, &e));
    all.push_back(std::move(e));
  }
  OneMainReplicaPerRng(&all);
  RequestUntakenShards(in, &all);
  RequestUnreadRerunShards(saved.layout.world_size(), &all);
  *out = std::move(all);
  if (plan_out) *plan_out = std::move(plan);
  return Status::OK();
}

Status StateTemplates(const HeterogeneousLayout& layout, const std::vector<TrainingConfig>& configs,
                      const CheckpointInfo& saved, const LoadFlags& flags,
                      std::vector<ShardedStateDict>* out) {
  std::vector<RankEntries> entries;
  CKPTSPEC_RETURN_IF_ERROR(BuildTemplateEntries(layout, configs, saved, flags, &entries));
  out->clear();
  for (RankEntries& e : entries) out->push_back(std::move(e.dict));
  return Status::OK();
}

}  // namespace ckptspec
