#include "runner/regression_case.h"

#include <utility>

#include "model/config_json.h"
#include "model/json_fields.h"
#include "model/json_util.h"
#include "properties/scenarios.h"

namespace ckptspec {
namespace {

using nlohmann::json;

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
bool ParseMomentDtype(const std::string& s, DType* d) { return ParseDType(s, d); }

Status OptimizerFromJson(const JsonField& f, OptimizerConfig* oc) {
  CKPTSPEC_RETURN_IF_ERROR(
      f.ExpectOnlyMembers({"step_counter", "freeze_family", "chaining", "cpu_offload_fraction",
                           "moment_dtype", "weight_decay", "beta1", "beta2", "eps", "decoupled_lr",
                           "decoupled_min_lr", "lr_mult_overrides", "lr_bound_overrides"}));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("step_counter").GetEnum(ParseStepCounter, &oc->step_counter));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("freeze_family").GetEnum(ParseFreezeFamily, &oc->freeze_family));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("chaining").GetEnum(ParseChaining, &oc->chaining));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("cpu_offload_fraction").GetDouble(&oc->cpu_offload_fraction));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("moment_dtype").GetEnum(ParseMomentDtype, &oc->moment_dtype));
  return GroupingMembersFromJson(f, &oc->grouping);
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
  CKPTSPEC_RETURN_IF_ERROR(SchedulerConfigFromJson(f.OptionalMember("scheduler"), &c->scheduler));
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
  json optimizer{{"step_counter", StepCounterName(o.step_counter)},
                 {"freeze_family", FreezeFamilyName(o.freeze_family)},
                 {"chaining", ChainingName(o.chaining)},
                 {"cpu_offload_fraction", o.cpu_offload_fraction},
                 {"moment_dtype", DTypeName(o.moment_dtype)}};
  GroupingMembersToJson(o.grouping, &optimizer);
  return json{{"seed", c.seed},
              {"optimizer", std::move(optimizer)},
              {"scheduler", SchedulerConfigToJson(c.scheduler)},
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
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("name").GetString(&m->name));
  CKPTSPEC_RETURN_IF_ERROR(LayoutMembersFromJson(f, &m->layout));
  CKPTSPEC_RETURN_IF_ERROR(ModelConfigFromJson(f.OptionalMember("model"), &config->model));
  const JsonField training = f.OptionalMember("training");
  CKPTSPEC_RETURN_IF_ERROR(TrainingFromJson(training, config));
  Status s = ValidateModelForLayout(config->model, m->layout);
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
  CKPTSPEC_RETURN_IF_ERROR(sharding.OptionalMember("optimizer_format")
                               .GetEnum(ParseOptimizerFormat, &sc.optimizer_format));
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
    json module{{"name", m.name}};
    LayoutMembersToJson(m.layout, &module);
    module["model"] = ModelConfigToJson(c.run.configs[i].model);
    module["training"] = TrainingToJson(c.run.configs[i]);
    modules.push_back(std::move(module));
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
