#include "model/training_state.h"
#include "model/number_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "model/content.h"
#include "model/float_codec.h"

namespace ckptspec {

namespace {

int64_t NumElements(const ParameterSpec& p) {
  int64_t n = 1;
  for (int64_t d : p.shape) n *= d;
  return n;
}

std::string BitsHex(uint64_t bits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(bits));
  return buf;
}

}  // namespace

const char* FreezeFamilyName(FreezeFamily f) {
  return f == FreezeFamily::kTorchOptim ? "torch_optim" : "megatron";
}

bool ParseFreezeFamily(const std::string& name, FreezeFamily* out) {
  for (FreezeFamily f : {FreezeFamily::kMegatron, FreezeFamily::kTorchOptim}) {
    if (name == FreezeFamilyName(f)) {
      *out = f;
      return true;
    }
  }
  return false;
}

const char* RngSavingName(RngSaving s) {
  return s == RngSaving::kRankLocal ? "rank_local" : "sharded";
}

bool ParseRngSaving(const std::string& name, RngSaving* out) {
  for (RngSaving s : {RngSaving::kSharded, RngSaving::kRankLocal}) {
    if (name == RngSavingName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

namespace {

// What ValidateTrainingConfig checks but the frozen names (CheckFrozenNames).
Status ValidateAllButFrozenNames(const TrainingConfig& c) {
  CKPTSPEC_RETURN_IF_ERROR(ValidateModelConfig(c.model));
  const DType dt = c.model.params_dtype;
  if (dt != DType::kFloat32 && dt != DType::kBFloat16 && dt != DType::kFloat16) {
    return Status::NotSupported(std::string("params_dtype ") + DTypeName(dt) +
                                ": training supports fp32, bf16 and fp16");
  }
  const DType moments = c.optimizer.moment_dtype;
  if (moments != DType::kFloat32 && moments != DType::kBFloat16) {
    return Status::NotSupported(std::string("optimizer moment_dtype ") + DTypeName(moments) +
                                ": Adam's moments are kept in fp32 or bf16");
  }
  CKPTSPEC_RETURN_IF_ERROR(ValidateSchedulerConfig(c.scheduler));
  CKPTSPEC_RETURN_IF_ERROR(ValidateDataConfig(c.data));
  if (!(c.optimizer.cpu_offload_fraction >= 0.0 && c.optimizer.cpu_offload_fraction <= 1.0)) {
    return Status::InvalidArgument(
        "cpu_offload_fraction = " + ExactDecimal(c.optimizer.cpu_offload_fraction) +
        " must be in [0, 1]");
  }
  for (const LrBoundOverride& o : c.optimizer.grouping.lr_bound_overrides) {
    const std::string what = "lr bound override for *" + o.name_contains + "*";
    if (o.name_contains.empty()) {
      return Status::InvalidArgument("an lr bound override has an empty name pattern");
    }
    if (!(std::isfinite(o.max_lr) && o.max_lr > 0.0)) {
      return Status::InvalidArgument(what + ": max_lr = " + ExactDecimal(o.max_lr) +
                                     " must be finite and positive");
    }
    if (o.min_lr && !(std::isfinite(*o.min_lr) && *o.min_lr >= 0.0 && *o.min_lr <= o.max_lr)) {
      return Status::InvalidArgument(what + ": min_lr = " + ExactDecimal(*o.min_lr) +
                                     " must be in [0, " + ExactDecimal(o.max_lr) + "]");
    }
  }
  if (c.optimizer.freeze_family == FreezeFamily::kTorchOptim) {
    if (c.optimizer.step_counter != StepCounter::kPerParameter) {
      return Status::InvalidArgument(
          "the torch_optim freezing family keeps its step per parameter, not per group");
    }
    if (c.optimizer.cpu_offload_fraction != 0.0) {
      return Status::InvalidArgument(
          "the torch_optim freezing family has no CPU offload (fraction " +
          ExactDecimal(c.optimizer.cpu_offload_fraction) + ")");
    }
  }
  if (c.ranks.empty()) return Status::InvalidArgument("training config lists no ranks");
  return Status::OK();
}

// Every frozen name is a parameter of `specs`, ModelParameters(c.model).
Status CheckFrozenNames(const TrainingConfig& c, const std::vector<ParameterSpec>& specs) {
  for (const std::string& name : c.frozen) {
    if (std::none_of(specs.begin(), specs.end(),
                     [&](const ParameterSpec& p) { return p.name == name; })) {
      return Status::NotFound("frozen parameter '" + name + "' is not a parameter of the model");
    }
  }
  return Status::OK();
}

}  // namespace

Status ValidateTrainingConfig(const TrainingConfig& c) {
  CKPTSPEC_RETURN_IF_ERROR(ValidateAllButFrozenNames(c));
  if (c.frozen.empty()) return Status::OK();  // the parameter list is needed for frozen names only
  return CheckFrozenNames(c, ModelParameters(c.model));
}

namespace {

void BuildOptimizers(TrainingState* s) {
  // torch.optim's groups hold the frozen parameters too.
  const bool megatron = s->config.optimizer.freeze_family == FreezeFamily::kMegatron;
  std::vector<bool> frozen(s->params.size());
  for (size_t i = 0; i < s->params.size(); ++i) frozen[i] = megatron && s->params[i].frozen;
  std::vector<ParamGroup> groups =
      DefaultParamGroups(s->specs, frozen, s->config.optimizer.grouping, s->config.scheduler.max_lr,
                         s->config.scheduler.min_lr);
  s->optimizers.clear();
  if (s->config.optimizer.chaining == Chaining::kSingle) {
    s->optimizers.push_back({"optimizer", std::move(groups)});
  } else {
    SubOptimizer dense{"dense", {}}, expert{"expert", {}};
    for (ParamGroup& g : groups) {
      (g.identity.is_expert_parallel ? expert : dense).groups.push_back(std::move(g));
    }
    if (!dense.groups.empty()) s->optimizers.push_back(std::move(dense));
    if (!expert.groups.empty()) s->optimizers.push_back(std::move(expert));
  }
  for (SubOptimizer& o : s->optimizers) ApplySchedule(s->scheduler, &o.groups);
}

}  // namespace

Status InitialTrainingState(const TrainingConfig& config, TrainingState* out) {
  CKPTSPEC_RETURN_IF_ERROR(ValidateAllButFrozenNames(config));
  TrainingState s;
  s.specs = ModelParameters(config.model);
  CKPTSPEC_RETURN_IF_ERROR(CheckFrozenNames(config, s.specs));
  s.config = config;
  const std::set<std::string> frozen(config.frozen.begin(), config.frozen.end());
  const DType dt = config.model.params_dtype;
  const bool mixed = dt != DType::kFloat32;

  int64_t trainable_total = 0;
  for (const ParameterSpec& p : s.specs) {
    if (!frozen.count(p.name)) trainable_total += NumElements(p);
  }
  const double offload_limit =
      config.optimizer.cpu_offload_fraction * static_cast<double>(trainable_total);
  int64_t trainable_before = 0;

  s.params.resize(s.specs.size());
  for (size_t i = 0; i < s.specs.size(); ++i) {
    const ParameterSpec& spec = s.specs[i];
    ParamState& p = s.params[i];
    const int64_t n = NumElements(spec);
    const uint64_t key = KeyHash(spec.name);
    p.model.resize(static_cast<size_t>(n));
    for (int64_t e = 0; e < n; ++e) {
      p.model[e] =
          static_cast<uint32_t>(ContentElementBits(dt, config.seed, key, static_cast<uint64_t>(e)));
    }
    p.frozen = frozen.count(spec.name) > 0;
    // torch.optim creates the state at a parameter's first step.
    if (p.frozen || config.optimizer.freeze_family == FreezeFamily::kTorchOptim) continue;
    p.offloaded = static_cast<double>(trainable_before) < offload_limit;
    trainable_before += n;
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t e = 0; e < n; ++e) values[e] = static_cast<float>(DecodeToDouble(dt, p.model[e]));
    if (mixed) p.main = values;
    if (p.offloaded) p.offload = values;
    p.exp_avg.assign(static_cast<size_t>(n), 0.0f);
    p.exp_avg_sq.assign(static_cast<size_t>(n), 0.0f);
  }
  s.scheduler.config = config.scheduler;
  s.scheduler.num_steps = 0;
  BuildOptimizers(&s);
  for (const RankCoords& r : config.ranks) {
    s.rng.push_back(InitialRankRng(config.seed, r, config.data_parallel_random_init));
  }
  s.data = InitialDataIterator(config.data);
  s.rerun = NewRerunStateMachine(config.rerun_mode, 0);
  s.iteration = 0;
  *out = std::move(s);
  return Status::OK();
}

int FindParameter(const TrainingState& s, const std::string& name) {
  for (size_t i = 0; i < s.specs.size(); ++i) {
    if (s.specs[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

double MasterValue(const TrainingState& s, int param, int64_t index) {
  const ParamState& p = s.params[param];
  if (!p.offload.empty()) return p.offload[index];
  if (!p.main.empty()) return p.main[index];
  return DecodeToDouble(s.config.model.params_dtype, p.model[index]);
}

Status FreezeParameter(TrainingState* s, const std::string& name) {
  const int idx = FindParameter(*s, name);
  if (idx < 0) return Status::NotFound("no parameter named '" + name + "'");
  ParamState& p = s->params[idx];
  if (p.frozen) return Status::FailedPrecondition("parameter '" + name + "' is already frozen");
  p.frozen = true;
  s->config.frozen.push_back(name);
  if (s->config.optimizer.freeze_family == FreezeFamily::kTorchOptim) return Status::OK();
  p.offloaded = false;
  p.main.clear();
  p.offload.clear();
  p.exp_avg.clear();
  p.exp_avg_sq.clear();
  p.step = 0;
  for (SubOptimizer& o : s->optimizers) {
    for (ParamGroup& g : o.groups)
      g.params.erase(std::remove(g.params.begin(), g.params.end(), idx), g.params.end());
    o.groups.erase(std::remove_if(o.groups.begin(), o.groups.end(),
                                  [](const ParamGroup& g) { return g.params.empty(); }),
                   o.groups.end());
  }
  s->optimizers.erase(std::remove_if(s->optimizers.begin(), s->optimizers.end(),
                                     [](const SubOptimizer& o) { return o.groups.empty(); }),
                      s->optimizers.end());
  return Status::OK();
}

Status UnfreezeParameter(TrainingState* s, const std::string& name) {
  const int idx = FindParameter(*s, name);
  if (idx < 0) return Status::NotFound("no parameter named '" + name + "'");
  ParamState& p = s->params[idx];
  if (!p.frozen) return Status::FailedPrecondition("parameter '" + name + "' is not frozen");
  if (s->config.optimizer.freeze_family != FreezeFamily::kTorchOptim) {
    return Status::FailedPrecondition(
        "parameter '" + name +
        "' cannot be unfrozen under the megatron freezing family (the optimizer was built "
        "without it)");
  }
  p.frozen = false;
  std::vector<std::string>& f = s->config.frozen;
  f.erase(std::remove(f.begin(), f.end(), name), f.end());
  return Status::OK();
}

void CreateOptimizerState(TrainingState* s, int param) {
  ParamState& p = s->params[param];
  const DType dt = s->config.model.params_dtype;
  p.exp_avg.assign(p.model.size(), 0.0f);
  p.exp_avg_sq.assign(p.model.size(), 0.0f);
  p.step = 0;
  if (dt != DType::kFloat32) {
    p.main.resize(p.model.size());
    for (size_t e = 0; e < p.model.size(); ++e) {
      p.main[e] = static_cast<float>(DecodeToDouble(dt, p.model[e]));
    }
  }
}

Status CheckStackedKeysWhole(const std::vector<ParameterSpec>& specs,
                             const std::vector<bool>& present) {
  std::map<std::string, bool> of_key;  // key -> first instance's flag
  for (size_t p = 0; p < specs.size() && p < present.size(); ++p) {
    if (of_key.emplace(specs[p].key, present[p]).first->second != present[p]) {
      return Status::NotSupported(specs[p].name + (present[p] ? " has" : " has no") +
                                  " optimizer state but another instance of its stacked key '" +
                                  specs[p].key + "' does not; the key's state would have gaps");
    }
  }
  return Status::OK();
}

std::vector<bool> OptimizerStatePresence(const TrainingState& s) {
  std::vector<bool> present;
  present.reserve(s.params.size());
  for (const ParamState& p : s.params) present.push_back(HasOptimizerState(p));
  return present;
}

Status CheckStackedKeysWhole(const TrainingState& s) {
  return CheckStackedKeysWhole(s.specs, OptimizerStatePresence(s));
}

void RefreshMastersFromModel(TrainingState* s) {
  const DType dt = s->config.model.params_dtype;
  for (ParamState& p : s->params) {
    if (!HasOptimizerState(p)) continue;
    for (size_t e = 0; e < p.model.size(); ++e) {
      const float v = static_cast<float>(DecodeToDouble(dt, p.model[e]));
      if (!p.main.empty()) p.main[e] = v;
      if (!p.offload.empty()) p.offload[e] = v;
    }
  }
}

TrainingState Restarted(const TrainingState& s) {
  TrainingState r = s;
  RerunStateMachine fresh = NewRerunStateMachine(s.rerun.mode, s.rerun.current_iteration);
  fresh.state = s.rerun.state;
  fresh.sharded = s.rerun.sharded;
  r.rerun = std::move(fresh);
  return r;
}

namespace {

std::string FloatVectorDiff(const char* what, const std::string& name, const std::vector<float>& a,
                            const std::vector<float>& b) {
  if (a.size() != b.size()) {
    return std::string(what) + " of " + name + " has " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size()) + " elements";
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (FloatToBits(a[i]) != FloatToBits(b[i])) {
      return std::string(what) + " of " + name + " at index " + std::to_string(i) + ": " +
             ExactDecimal(a[i]) + " (" + BitsHex(FloatToBits(a[i])) + ") vs " + ExactDecimal(b[i]) +
             " (" + BitsHex(FloatToBits(b[i])) + ")";
    }
  }
  return "";
}

std::string GroupDiff(const std::string& where, const ParamGroup& a, const ParamGroup& b) {
  ParamGroupKey ka, kb;
  // A diff describes, it does not validate: a key left partial by an absent or non-finite field
  // still compares (the absent fields are compared beside it).
  IdentityKey(a.identity, IdentityKeySet::kWithLrBounds, where, &ka).IgnoreError();
  IdentityKey(b.identity, IdentityKeySet::kWithLrBounds, where, &kb).IgnoreError();
  for (int f = 0; f < kNumIdentityFields; ++f) {
    const IdentityField field = static_cast<IdentityField>(f);
    if (a.identity.Has(field) != b.identity.Has(field)) {
      return where + " identity: '" + IdentityFieldName(field) + "' is " +
             (a.identity.Has(field) ? "present" : "absent") + " vs " +
             (b.identity.Has(field) ? "present" : "absent");
    }
  }
  if (!(ka == kb) || a.identity.declares_max_lr != b.identity.declares_max_lr ||
      a.identity.declares_min_lr != b.identity.declares_min_lr) {
    return where + " identity: " + DescribeKey(ka) + " vs " + DescribeKey(kb);
  }
  // The bounds the group carries, declared or the scheduler's (the key holds only declared ones).
  auto bound = [&](const char* f, const std::optional<double>& x,
                   const std::optional<double>& y) -> std::string {
    if (x.has_value() == y.has_value() && (!x || std::memcmp(&*x, &*y, sizeof(double)) == 0)) {
      return "";
    }
    return where + " " + f + ": " + (x ? ExactDecimal(*x) : "None") + " vs " +
           (y ? ExactDecimal(*y) : "None");
  };
  for (const std::string& d : {bound("max_lr", a.identity.max_lr, b.identity.max_lr),
                               bound("min_lr", a.identity.min_lr, b.identity.min_lr)}) {
    if (!d.empty()) return d;
  }
  auto num = [&](const char* f, double x, double y) -> std::string {
    if (std::memcmp(&x, &y, sizeof x) == 0) return "";
    return where + " " + f + ": " + ExactDecimal(x) + " vs " + ExactDecimal(y);
  };
  for (const std::string& d :
       {num("lr", a.lr, b.lr), num("weight_decay", a.weight_decay, b.weight_decay),
        num("beta1", a.beta1, b.beta1), num("beta2", a.beta2, b.beta2), num("eps", a.eps, b.eps)}) {
    if (!d.empty()) return d;
  }
  if (a.step != b.step) {
    return where + " step: " + std::to_string(a.step) + " vs " + std::to_string(b.step);
  }
  if (a.params != b.params) return where + " holds different parameters";
  return "";
}

}  // namespace

std::string FirstDifference(const TrainingState& a, const TrainingState& b) {
  if (a.iteration != b.iteration) {
    return "iteration: " + std::to_string(a.iteration) + " vs " + std::to_string(b.iteration);
  }
  if (a.specs.size() != b.specs.size()) {
    return "parameter count: " + std::to_string(a.specs.size()) + " vs " +
           std::to_string(b.specs.size());
  }
  if (a.config.model.params_dtype != b.config.model.params_dtype) {
    return std::string("model dtype: ") + DTypeName(a.config.model.params_dtype) + " vs " +
           DTypeName(b.config.model.params_dtype);
  }
  const DType dt = a.config.model.params_dtype;
  for (size_t i = 0; i < a.specs.size(); ++i) {
    const std::string& name = a.specs[i].name;
    if (name != b.specs[i].name)
      return "parameter " + std::to_string(i) + ": " + name + " vs " + b.specs[i].name;
    const ParamState& pa = a.params[i];
    const ParamState& pb = b.params[i];
    if (pa.frozen != pb.frozen) {
      return "parameter " + name + " is " + (pa.frozen ? "frozen" : "trainable") + " vs " +
             (pb.frozen ? "frozen" : "trainable");
    }
    if (pa.offloaded != pb.offloaded) return "parameter " + name + " offloaded differs";
    if (HasOptimizerState(pa) != HasOptimizerState(pb)) {
      return "parameter " + name + (HasOptimizerState(pa) ? " has" : " has no") +
             " optimizer state vs" + (HasOptimizerState(pb) ? " has" : " has no");
    }
    if (pa.model.size() != pb.model.size()) return "model weight of " + name + " differs in size";
    for (size_t e = 0; e < pa.model.size(); ++e) {
      if (pa.model[e] != pb.model[e]) {
        return "model weight of " + name + " at index " + std::to_string(e) + ": " +
               ExactDecimal(DecodeToDouble(dt, pa.model[e])) + " (" + BitsHex(pa.model[e]) +
               ") vs " + ExactDecimal(DecodeToDouble(dt, pb.model[e])) + " (" +
               BitsHex(pb.model[e]) + ")";
      }
    }
    for (const std::string& d :
         {FloatVectorDiff("main copy", name, pa.main, pb.main),
          FloatVectorDiff("offload copy", name, pa.offload, pb.offload),
          FloatVectorDiff("exp_avg", name, pa.exp_avg, pb.exp_avg),
          FloatVectorDiff("exp_avg_sq", name, pa.exp_avg_sq, pb.exp_avg_sq)}) {
      if (!d.empty()) return d;
    }
    if (pa.step != pb.step) {
      return "step of " + name + ": " + std::to_string(pa.step) + " vs " + std::to_string(pb.step);
    }
  }
  if (a.optimizers.size() != b.optimizers.size()) {
    return "sub-optimizer count: " + std::to_string(a.optimizers.size()) + " vs " +
           std::to_string(b.optimizers.size());
  }
  for (size_t o = 0; o < a.optimizers.size(); ++o) {
    const SubOptimizer& oa = a.optimizers[o];
    const SubOptimizer& ob = b.optimizers[o];
    if (oa.name != ob.name)
      return "sub-optimizer " + std::to_string(o) + ": " + oa.name + " vs " + ob.name;
    if (oa.groups.size() != ob.groups.size())
      return "optimizer " + oa.name + " group count differs";
    for (size_t g = 0; g < oa.groups.size(); ++g) {
      const std::string d = GroupDiff("optimizer " + oa.name + " param group " + std::to_string(g),
                                      oa.groups[g], ob.groups[g]);
      if (!d.empty()) return d;
    }
  }
  if (a.scheduler.num_steps != b.scheduler.num_steps) {
    return "scheduler num_steps: " + std::to_string(a.scheduler.num_steps) + " vs " +
           std::to_string(b.scheduler.num_steps);
  }
  if (a.scheduler.config != b.scheduler.config) {
    return "scheduler: " + SchedulerStateToJson(a.scheduler).dump() + " vs " +
           SchedulerStateToJson(b.scheduler).dump();
  }
  if (a.rng.size() != b.rng.size()) return "RNG rank count differs";
  for (size_t r = 0; r < a.rng.size(); ++r) {
    if (a.rng[r] != b.rng[r]) {
      return "RNG state of rank " + DescribeCoords(a.config.ranks[r]) + ": " +
             RankRngStateToJson(a.rng[r]).dump() + " vs " + RankRngStateToJson(b.rng[r]).dump();
    }
  }
  if (!(a.data == b.data)) {
    return "data iterator: " + DataIteratorStateToJson(a.data).dump() + " vs " +
           DataIteratorStateToJson(b.data).dump();
  }
  if (a.rerun.mode != b.rerun.mode || a.rerun.state != b.rerun.state ||
      a.rerun.current_iteration != b.rerun.current_iteration ||
      !(a.rerun.sharded == b.rerun.sharded)) {
    return std::string("rerun state machine: ") + RerunModeName(a.rerun.mode) + "/" +
           RerunStateName(a.rerun.state) + "/iteration " +
           std::to_string(a.rerun.current_iteration) + " vs " + RerunModeName(b.rerun.mode) + "/" +
           RerunStateName(b.rerun.state) + "/iteration " +
           std::to_string(b.rerun.current_iteration) +
           (a.rerun.sharded == b.rerun.sharded ? "" : " (sharded fields differ)");
  }
  return "";
}

}  // namespace ckptspec
