#include "properties/regression_case.h"

#include <utility>

#include "model/json_fields.h"
#include "model/json_util.h"
#include "properties/scenarios.h"

namespace ckptspec {
namespace {

using nlohmann::json;

bool ParseDTypeName(const std::string& s, DType* d) { return ParseDType(s, d); }
bool ParseStepCounter(const std::string& s, StepCounter* c) {
  if (s == "per_parameter")
    *c = StepCounter::kPerParameter;
  else if (s == "per_group")
    *c = StepCounter::kPerGroup;
  else
    return false;
  return true;
}
const char* StepCounterName(StepCounter c) {
  return c == StepCounter::kPerGroup ? "per_group" : "per_parameter";
}
bool ParseChaining(const std::string& s, Chaining* c) {
  if (s == "single")
    *c = Chaining::kSingle;
  else if (s == "dense_expert")
    *c = Chaining::kDenseExpert;
  else
    return false;
  return true;
}
const char* ChainingName(Chaining c) {
  return c == Chaining::kDenseExpert ? "dense_expert" : "single";
}
const WsdDecayStyle kWsdStyles[] = {WsdDecayStyle::kLinear, WsdDecayStyle::kCosine,
                                    WsdDecayStyle::kExponential, WsdDecayStyle::kMinusSqrt};
const char* WsdName(WsdDecayStyle s) {
  switch (s) {
    case WsdDecayStyle::kLinear:
      return "linear";
    case WsdDecayStyle::kCosine:
      return "cosine";
    case WsdDecayStyle::kExponential:
      return "exponential";
    case WsdDecayStyle::kMinusSqrt:
      return "minus_sqrt";
  }
  return "?";
}
bool ParseWsd(const std::string& s, WsdDecayStyle* out) {
  for (WsdDecayStyle w : kWsdStyles) {
    if (s == WsdName(w)) {
      *out = w;
      return true;
    }
  }
  return false;
}
bool ParseFormat(const std::string& s, OptimizerFormat* f) {
  for (OptimizerFormat x : {OptimizerFormat::kFullyReshardable, OptimizerFormat::kDpReshardable}) {
    if (s == OptimizerFormatName(x)) {
      *f = x;
      return true;
    }
  }
  return false;
}

// ModelConfig's members read as integers and as booleans, by name.
const std::pair<const char*, int ModelConfig::*> kModelIntegers[] = {
    {"num_layers", &ModelConfig::num_layers},
    {"hidden_size", &ModelConfig::hidden_size},
    {"num_attention_heads", &ModelConfig::num_attention_heads},
    {"num_query_groups", &ModelConfig::num_query_groups},
    {"ffn_hidden_size", &ModelConfig::ffn_hidden_size},
    {"vocab_size", &ModelConfig::vocab_size},
    {"num_experts", &ModelConfig::num_experts},
    {"moe_ffn_hidden_size", &ModelConfig::moe_ffn_hidden_size},
    {"moe_layer_freq", &ModelConfig::moe_layer_freq},
};
const std::pair<const char*, bool ModelConfig::*> kModelSwitches[] = {
    {"gated_linear_unit", &ModelConfig::gated_linear_unit},
    {"add_bias", &ModelConfig::add_bias},
    {"tie_embeddings", &ModelConfig::tie_embeddings},
};

// Every member of these objects may be left out (the struct's default stays); members not listed
// are errors.
Status ModelFromJson(const JsonField& f, ModelConfig* m) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers(
      {"name", "num_layers", "hidden_size", "num_attention_heads", "num_query_groups",
       "ffn_hidden_size", "vocab_size", "gated_linear_unit", "add_bias", "tie_embeddings",
       "num_experts", "moe_ffn_hidden_size", "moe_layer_freq", "params_dtype", "pipeline_split"}));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("name").GetString(&m->name));
  for (const auto& [name, member] : kModelIntegers) {
    CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember(name).GetInt(&(m->*member)));
  }
  for (const auto& [name, member] : kModelSwitches) {
    CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember(name).GetBool(&(m->*member)));
  }
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("params_dtype").GetEnum(ParseDTypeName, &m->params_dtype));
  const JsonField split = f.OptionalMember("pipeline_split");
  PipelineSplit& ps = m->pipeline_split;
  CKPTSPEC_RETURN_IF_ERROR(split.ExpectOnlyMembers({"first_stage_layers", "last_stage_layers"}));
  CKPTSPEC_RETURN_IF_ERROR(
      split.OptionalMember("first_stage_layers").GetInt(&ps.first_stage_layers));
  return split.OptionalMember("last_stage_layers").GetInt(&ps.last_stage_layers);
}

json ModelToJson(const ModelConfig& m) {
  return json{{"name", m.name},
              {"num_layers", m.num_layers},
              {"hidden_size", m.hidden_size},
              {"num_attention_heads", m.num_attention_heads},
              {"num_query_groups", m.num_query_groups},
              {"ffn_hidden_size", m.ffn_hidden_size},
              {"vocab_size", m.vocab_size},
              {"gated_linear_unit", m.gated_linear_unit},
              {"add_bias", m.add_bias},
              {"tie_embeddings", m.tie_embeddings},
              {"num_experts", m.num_experts},
              {"moe_ffn_hidden_size", m.moe_ffn_hidden_size},
              {"moe_layer_freq", m.moe_layer_freq},
              {"params_dtype", DTypeName(m.params_dtype)},
              {"pipeline_split",
               {{"first_stage_layers", m.pipeline_split.first_stage_layers},
                {"last_stage_layers", m.pipeline_split.last_stage_layers}}}};
}

Status OptimizerFromJson(const JsonField& f, OptimizerConfig* oc) {
  CKPTSPEC_RETURN_IF_ERROR(
      f.ExpectOnlyMembers({"step_counter", "freeze_family", "chaining", "cpu_offload_fraction",
                           "weight_decay", "beta1", "beta2", "eps", "decoupled_lr",
                           "decoupled_min_lr", "lr_mult_overrides", "lr_bound_overrides"}));
  GroupingConfig& g = oc->grouping;
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("step_counter").GetEnum(ParseStepCounter, &oc->step_counter));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("freeze_family").GetEnum(ParseFreezeFamily, &oc->freeze_family));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("chaining").GetEnum(ParseChaining, &oc->chaining));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("cpu_offload_fraction").GetDouble(&oc->cpu_offload_fraction));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("weight_decay").GetDouble(&g.weight_decay));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("beta1").GetDouble(&g.beta1));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("beta2").GetDouble(&g.beta2));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("eps").GetDouble(&g.eps));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("decoupled_lr").GetDoubleOrNull(&g.decoupled_lr));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("decoupled_min_lr").GetDoubleOrNull(&g.decoupled_min_lr));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("lr_mult_overrides").ForEachElement([&](const JsonField& e) {
        CKPTSPEC_RETURN_IF_ERROR(e.ExpectOnlyMembers({"name_contains", "lr_mult"}));
        LrMultOverride o;
        CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("name_contains").GetString(&o.name_contains));
        CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("lr_mult").GetDouble(&o.lr_mult));
        g.lr_mult_overrides.push_back(o);
        return Status::OK();
      }));
  return f.OptionalMember("lr_bound_overrides").ForEachElement([&](const JsonField& e) {
    CKPTSPEC_RETURN_IF_ERROR(e.ExpectOnlyMembers({"name_contains", "max_lr", "min_lr"}));
    LrBoundOverride o;
    CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("name_contains").GetString(&o.name_contains));
    CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("max_lr").GetDouble(&o.max_lr));
    CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("min_lr").GetDoubleOrNull(&o.min_lr));
    g.lr_bound_overrides.push_back(o);
    return Status::OK();
  });
}

Status SchedulerFromJson(const JsonField& f, SchedulerConfig* sc) {
  CKPTSPEC_RETURN_IF_ERROR(
      f.ExpectOnlyMembers({"init_lr", "max_lr", "min_lr", "lr_warmup_steps", "lr_decay_steps",
                           "lr_decay_style", "wsd_decay_steps", "lr_wsd_decay_style", "start_wd",
                           "end_wd", "wd_incr_steps", "wd_incr_style"}));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("init_lr").GetDouble(&sc->init_lr));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("max_lr").GetDouble(&sc->max_lr));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("min_lr").GetDouble(&sc->min_lr));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("lr_warmup_steps").GetInt(&sc->lr_warmup_steps));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("lr_decay_steps").GetInt(&sc->lr_decay_steps));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("lr_decay_style").GetEnum(ParseLrDecayStyle, &sc->lr_decay_style));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("wsd_decay_steps").GetInt(&sc->wsd_decay_steps));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("lr_wsd_decay_style").GetEnum(ParseWsd, &sc->lr_wsd_decay_style));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("start_wd").GetDouble(&sc->start_wd));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("end_wd").GetDouble(&sc->end_wd));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("wd_incr_steps").GetInt(&sc->wd_incr_steps));
  return f.OptionalMember("wd_incr_style").GetEnum(ParseWdIncrStyle, &sc->wd_incr_style);
}

Status DataFromJson(const JsonField& f, DataConfig* d) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers(
      {"sampler", "num_samples", "seed", "shuffle", "global_batch_size", "micro_batch_size"}));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("sampler").GetEnum(ParseDataSampler, &d->sampler));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("num_samples").GetInt(&d->num_samples));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("seed").GetUint64(&d->seed));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("shuffle").GetBool(&d->shuffle));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("global_batch_size").GetInt(&d->global_batch_size));
  return f.OptionalMember("micro_batch_size").GetInt(&d->micro_batch_size);
}

Status TrainingFromJson(const JsonField& f, TrainingConfig* c) {
  CKPTSPEC_RETURN_IF_ERROR(
      f.ExpectOnlyMembers({"seed", "optimizer", "scheduler", "data", "frozen",
                           "data_parallel_random_init", "rng_saving", "rerun_mode"}));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("seed").GetUint64(&c->seed));
  CKPTSPEC_RETURN_IF_ERROR(OptimizerFromJson(f.OptionalMember("optimizer"), &c->optimizer));
  CKPTSPEC_RETURN_IF_ERROR(SchedulerFromJson(f.OptionalMember("scheduler"), &c->scheduler));
  CKPTSPEC_RETURN_IF_ERROR(DataFromJson(f.OptionalMember("data"), &c->data));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("frozen").ForEachElement([&](const JsonField& e) {
    std::string name;
    CKPTSPEC_RETURN_IF_ERROR(e.GetString(&name));
    c->frozen.push_back(std::move(name));
    return Status::OK();
  }));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("data_parallel_random_init").GetBool(&c->data_parallel_random_init));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("rng_saving").GetEnum(ParseRngSaving, &c->rng_saving));
  return f.OptionalMember("rerun_mode").GetEnum(ParseRerunMode, &c->rerun_mode);
}

json TrainingToJson(const TrainingConfig& c) {
  const OptimizerConfig& o = c.optimizer;
  json overrides = json::array();
  for (const LrMultOverride& x : o.grouping.lr_mult_overrides) {
    overrides.push_back({{"name_contains", x.name_contains}, {"lr_mult", x.lr_mult}});
  }
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json bound_overrides = json::array();
  for (const LrBoundOverride& x : o.grouping.lr_bound_overrides) {
    bound_overrides.push_back(
        {{"name_contains", x.name_contains}, {"max_lr", x.max_lr}, {"min_lr", opt(x.min_lr)}});
  }
  const SchedulerConfig& s = c.scheduler;
  return json{{"seed", c.seed},
              {"optimizer",
               {{"step_counter", StepCounterName(o.step_counter)},
                {"freeze_family", FreezeFamilyName(o.freeze_family)},
                {"chaining", ChainingName(o.chaining)},
                {"cpu_offload_fraction", o.cpu_offload_fraction},
                {"weight_decay", o.grouping.weight_decay},
                {"beta1", o.grouping.beta1},
                {"beta2", o.grouping.beta2},
                {"eps", o.grouping.eps},
                {"decoupled_lr", opt(o.grouping.decoupled_lr)},
                {"decoupled_min_lr", opt(o.grouping.decoupled_min_lr)},
                {"lr_mult_overrides", overrides},
                {"lr_bound_overrides", bound_overrides}}},
              {"scheduler",
               {{"init_lr", s.init_lr},
                {"max_lr", s.max_lr},
                {"min_lr", s.min_lr},
                {"lr_warmup_steps", s.lr_warmup_steps},
                {"lr_decay_steps", s.lr_decay_steps},
                {"lr_decay_style", LrDecayStyleName(s.lr_decay_style)},
                {"wsd_decay_steps", s.wsd_decay_steps},
                {"lr_wsd_decay_style", WsdName(s.lr_wsd_decay_style)},
                {"start_wd", s.start_wd},
                {"end_wd", s.end_wd},
                {"wd_incr_steps", s.wd_incr_steps},
                {"wd_incr_style", WdIncrStyleName(s.wd_incr_style)}}},
              {"data",
               {{"sampler", DataSamplerName(c.data.sampler)},
                {"num_samples", c.data.num_samples},
                {"seed", c.data.seed},
                {"shuffle", c.data.shuffle},
                {"global_batch_size", c.data.global_batch_size},
                {"micro_batch_size", c.data.micro_batch_size}}},
              {"frozen", c.frozen},
              {"data_parallel_random_init", c.data_parallel_random_init},
              {"rng_saving", RngSavingName(c.rng_saving)},
              {"rerun_mode", RerunModeName(c.rerun_mode)}};
}

// run.modules[i]: its layout, checked against its model, and its training config.
Status ModuleFromJson(const JsonField& f, ModuleLayout* m, TrainingConfig* config) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers(
      {"name", "world_size", "tp", "pp", "dp", "cp", "ep", "etp", "order", "model", "training"}));
  int64_t world = 0;
  ParallelSizes sizes;
  std::string order = "tp-cp-ep-dp-pp";
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("name").GetString(&m->name));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("world_size").GetInt64(&world));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("tp").GetInt64(&sizes.tp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("pp").GetInt64(&sizes.pp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("dp").GetInt64(&sizes.dp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("cp").GetInt64(&sizes.cp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("ep").GetInt64(&sizes.ep));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("etp").GetInt64(&sizes.etp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("order").GetString(&order));
  CKPTSPEC_RETURN_IF_ERROR(ModelFromJson(f.OptionalMember("model"), &config->model));
  const JsonField training = f.OptionalMember("training");
  CKPTSPEC_RETURN_IF_ERROR(TrainingFromJson(training, config));
  RankOrder ro;
  Status s = RankOrder::Parse(order, &ro);
  if (s.ok()) s = Layout::Make(world, sizes, ro, &m->layout);
  if (s.ok()) s = ValidateModelForLayout(config->model, m->layout);
  if (!s.ok()) return f.Error(s.message());
  config->model.name = m->name;
  config->data.dp_size = m->layout.dp();
  config->ranks.clear();
  for (int64_t rank = 0; rank < m->layout.world_size(); ++rank) {
    config->ranks.push_back(m->layout.Coords(rank));
  }
  s = ValidateTrainingConfig(*config);
  if (!s.ok()) return training.Error(s.message());
  return Status::OK();
}

Status RunFromJson(const JsonField& f, RunSpec* run) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers({"modules", "sharding"}));
  const JsonField modules = f.Member("modules");
  if (modules.size() == 0) return modules.Expected("a non-empty array");
  std::vector<ModuleLayout> layouts;
  run->configs.clear();
  int64_t next_rank = 0;
  CKPTSPEC_RETURN_IF_ERROR(modules.ForEachElement([&](const JsonField& module) {
    ModuleLayout m;
    TrainingConfig config;
    CKPTSPEC_RETURN_IF_ERROR(ModuleFromJson(module, &m, &config));
    m.first_rank = next_rank;
    next_rank += m.layout.world_size();
    layouts.push_back(std::move(m));
    run->configs.push_back(std::move(config));
    return Status::OK();
  }));
  const JsonField sharding = f.OptionalMember("sharding");
  ShardingConfig& sc = run->sharding;
  CKPTSPEC_RETURN_IF_ERROR(sharding.ExpectOnlyMembers(
      {"optimizer_format", "bucket_size", "param_alignment", "chained_avoid_prefix"}));
  CKPTSPEC_RETURN_IF_ERROR(
      sharding.OptionalMember("optimizer_format").GetEnum(ParseFormat, &sc.optimizer_format));
  CKPTSPEC_RETURN_IF_ERROR(sharding.OptionalMember("bucket_size").GetInt(&sc.buffers.bucket_size));
  CKPTSPEC_RETURN_IF_ERROR(
      sharding.OptionalMember("param_alignment").GetInt(&sc.buffers.param_alignment));
  CKPTSPEC_RETURN_IF_ERROR(
      sharding.OptionalMember("chained_avoid_prefix").GetBool(&sc.chained_avoid_prefix));
  const Status s = HeterogeneousLayout::Make(std::move(layouts), &run->layout);
  if (!s.ok()) return modules.Error(s.message());
  std::vector<TrainingState> states;
  const Status built = InitialStates(*run, &states);
  if (!built.ok()) return f.Error("the run does not build: " + built.message());
  return Status::OK();
}

Status ReadRegressionCase(const JsonField& f, RegressionCase* c) {
  CKPTSPEC_RETURN_IF_ERROR(
      f.ExpectOnlyMembers({"format", "name", "description", "property", "parameters", "run"}));
  const JsonField format = f.Member("format");
  std::string format_name;
  CKPTSPEC_RETURN_IF_ERROR(format.GetString(&format_name));
  if (format_name != kRegressionFormat) {
    return format.Expected(std::string("\"") + kRegressionFormat + "\"");
  }
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("name").GetString(&c->name));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("description").GetString(&c->description));
  const JsonField property = f.OptionalMember("property");
  CKPTSPEC_RETURN_IF_ERROR(property.GetString(&c->property));
  if (c->property != "P1" && c->property != "P2") {
    return property.Expected("\"P1\" or \"P2\"");  // the properties replay knows
  }
  const JsonField parameters = f.OptionalMember("parameters");
  CKPTSPEC_RETURN_IF_ERROR(
      parameters.ExpectOnlyMembers({"train_before_save", "train_after_resume", "async"}));
  CKPTSPEC_RETURN_IF_ERROR(
      parameters.OptionalMember("train_before_save").GetNonNegativeInt64(&c->train_before_save));
  CKPTSPEC_RETURN_IF_ERROR(
      parameters.OptionalMember("train_after_resume").GetNonNegativeInt64(&c->train_after_resume));
  CKPTSPEC_RETURN_IF_ERROR(parameters.OptionalMember("async").GetBool(&c->async));
  return RunFromJson(f.Member("run"), &c->run);
}

}  // namespace

Status RegressionCaseFromJson(const json& j, RegressionCase* out) {
  RegressionCase c;
  const Status read = ReadRegressionCase(JsonField(j), &c);
  if (!read.ok()) return read.WithContext("regression");
  *out = std::move(c);
  return Status::OK();
}

Status ParseRegressionCase(const std::string& text, RegressionCase* out) {
  json j;
  const Status read = ParseJson(text, JsonLimits(), &j);
  if (!read.ok()) return Status::InvalidArgument("regression: " + read.message());
  return RegressionCaseFromJson(j, out);
}

json RegressionCaseToJson(const RegressionCase& c) {
  json modules = json::array();
  for (size_t i = 0; i < c.run.configs.size(); ++i) {
    const ModuleLayout& m = c.run.layout.modules()[i];
    const Layout& l = m.layout;
    modules.push_back({{"name", m.name},
                       {"world_size", l.world_size()},
                       {"tp", l.tp()},
                       {"pp", l.pp()},
                       {"dp", l.dp()},
                       {"cp", l.cp()},
                       {"ep", l.ep()},
                       {"etp", l.etp()},
                       {"order", l.order().ToString()},
                       {"model", ModelToJson(c.run.configs[i].model)},
                       {"training", TrainingToJson(c.run.configs[i])}});
  }
  return json{{"format", kRegressionFormat},
              {"name", c.name},
              {"description", c.description},
              {"property", c.property},
              {"parameters",
               {{"train_before_save", c.train_before_save},
                {"train_after_resume", c.train_after_resume},
                {"async", c.async}}},
              {"run",
               {{"modules", modules},
                {"sharding",
                 {{"optimizer_format", OptimizerFormatName(c.run.sharding.optimizer_format)},
                  {"bucket_size", c.run.sharding.buffers.bucket_size},
                  {"param_alignment", c.run.sharding.buffers.param_alignment},
                  {"chained_avoid_prefix", c.run.sharding.chained_avoid_prefix}}}}}};
}

Status ReplayRegression(const RegressionCase& c, const TargetFactory& factory) {
  if (c.property == "P1") {
    return ResumeEquivalenceScenario(factory, c.run, c.train_before_save, c.train_after_resume,
                                     c.async && factory.capabilities.async);
  }
  if (c.property == "P2") return RoundTripScenario(factory, c.run, c.train_before_save);
  return Status::InvalidArgument("regression '" + c.name + "': unknown property " + c.property);
}

}  // namespace ckptspec
