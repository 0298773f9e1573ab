#include "model/framework_job.h"

#include <sstream>
#include <utility>

#include "model/config_json.h"
#include "model/describe.h"

namespace ckptspec {
namespace {

using nlohmann::json;

Status InvalidJob(const std::string& what) { return Status::InvalidArgument("job: " + what); }

}  // namespace

int64_t FrameworkJob::world_size() const {
  int64_t n = 0;
  for (const FrameworkModule& m : modules) n += m.layout.world_size();
  return n;
}

HeterogeneousLayout JobLayout(const FrameworkJob& job) {
  std::vector<ModuleLayout> modules;
  int64_t next = 0;
  for (const FrameworkModule& m : job.modules) {
    modules.push_back({m.name, next, m.layout});
    next += m.layout.world_size();
  }
  HeterogeneousLayout out;
  if (!HeterogeneousLayout::Make(std::move(modules), &out).ok()) return HeterogeneousLayout();
  return out;
}

Status ValidateFrameworkJob(const FrameworkJob& job) {
  RunSpec run;
  return JobRunSpec(job, &run);
}

bool IsFrozen(const FrameworkJob& job, const std::string& name) {
  for (const std::string& pattern : job.frozen) {
    if (name.find(pattern) != std::string::npos) return true;
  }
  return false;
}

Status JobRunSpec(const FrameworkJob& job, RunSpec* out) {
  if (job.modules.empty()) return InvalidJob("no modules");
  if (job.global_batch_size < 1) {
    return InvalidJob("global_batch_size = " + std::to_string(job.global_batch_size) +
                      ", must be positive");
  }
  if (!(job.optimizer.cpu_offload_fraction >= 0 && job.optimizer.cpu_offload_fraction <= 1)) {
    return InvalidJob("optimizer.cpu_offload_fraction = " +
                      std::to_string(job.optimizer.cpu_offload_fraction) + ", must be in [0, 1]");
  }
  if (job.optimizer.format == OptimizerFormat::kDpReshardable && !job.optimizer.distributed) {
    return InvalidJob("optimizer.format dp_reshardable needs the distributed optimizer");
  }
  for (const std::string& pattern : job.frozen) {
    if (pattern.empty()) return InvalidJob("frozen: an empty pattern would freeze everything");
  }
  CKPTSPEC_RETURN_IF_ERROR(ValidateSchedulerConfig(job.scheduler).WithContext("job: scheduler"));
  RunSpec run;
  std::vector<ModuleLayout> layouts;
  int64_t next = 0;
  for (size_t i = 0; i < job.modules.size(); ++i) {
    const FrameworkModule& m = job.modules[i];
    const std::string what = "modules[" + std::to_string(i) + "]";
    if (job.global_batch_size % m.layout.dp() != 0) {
      return InvalidJob(what + ": global_batch_size " + std::to_string(job.global_batch_size) +
                        " is not divisible by its DP size " + std::to_string(m.layout.dp()));
    }
    TrainingConfig c;
    c.model = m.model;
    c.model.name = m.name;
    CKPTSPEC_RETURN_IF_ERROR(ValidateModelConfig(c.model).WithContext("job: " + what));
    CKPTSPEC_RETURN_IF_ERROR(ValidateModelForLayout(c.model, m.layout).WithContext("job: " + what));
    c.seed = job.seed;
    c.optimizer.grouping = job.optimizer.grouping;
    c.optimizer.freeze_family = FreezeFamily::kMegatron;
    c.optimizer.step_counter = StepCounter::kPerParameter;
    c.optimizer.chaining = c.model.num_experts > 0 ? Chaining::kDenseExpert : Chaining::kSingle;
    c.optimizer.cpu_offload_fraction = job.optimizer.cpu_offload_fraction;
    c.scheduler = job.scheduler;
    c.data.sampler = DataSampler::kGlobal;
    c.data.seed = job.seed;
    c.data.micro_batch_size = 1;
    c.data.global_batch_size = job.global_batch_size;
    c.rerun_mode = job.rerun_mode;
    for (const ParameterSpec& p : ModelParameters(c.model)) {
      if (IsFrozen(job, p.name)) c.frozen.push_back(p.name);
    }
    FitConfigToLayout(m.layout, &c);
    CKPTSPEC_RETURN_IF_ERROR(ValidateTrainingConfig(c).WithContext("job: " + what));
    layouts.push_back({m.name, next, m.layout});
    next += m.layout.world_size();
    run.configs.push_back(std::move(c));
  }
  CKPTSPEC_RETURN_IF_ERROR(
      HeterogeneousLayout::Make(std::move(layouts), &run.layout).WithContext("job: modules"));
  run.sharding.optimizer_format = job.optimizer.format;
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(run, &states).WithContext("job: the spec's run"));
  *out = std::move(run);
  return Status::OK();
}

json FrameworkJobToJson(const FrameworkJob& job) {
  json modules = json::array();
  for (const FrameworkModule& m : job.modules) {
    json module{{"name", m.name}};
    LayoutMembersToJson(m.layout, &module);
    json model = ModelConfigToJson(m.model);
    model.erase("name");  // the module's
    module["model"] = std::move(model);
    modules.push_back(std::move(module));
  }
  json optimizer{{"distributed", job.optimizer.distributed},
                 {"cpu_offload_fraction", job.optimizer.cpu_offload_fraction},
                 {"format", OptimizerFormatName(job.optimizer.format)}};
  GroupingMembersToJson(job.optimizer.grouping, &optimizer);
  json options = json::object();
  for (const auto& [name, value] : job.options) options[name] = value;
  return json{{"seed", job.seed},
              {"modules", std::move(modules)},
              {"frozen", job.frozen},
              {"optimizer", std::move(optimizer)},
              {"scheduler", SchedulerConfigToJson(job.scheduler)},
              {"global_batch_size", job.global_batch_size},
              {"rerun_mode", RerunModeName(job.rerun_mode)},
              {"assume_constant_structure", job.assume_constant_structure},
              {"options", std::move(options)}};
}

Status FrameworkJobFromJson(const JsonField& f, FrameworkJob* out) {
  FrameworkJob job;
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers({"seed", "modules", "frozen", "optimizer",
                                                "scheduler", "global_batch_size", "rerun_mode",
                                                "assume_constant_structure", "options"}));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("seed").GetUint64(&job.seed));
  const JsonField modules = f.Member("modules");
  CKPTSPEC_RETURN_IF_ERROR(modules.ForEachElement([&](const JsonField& e) {
    CKPTSPEC_RETURN_IF_ERROR(e.ExpectOnlyMembers(
        {"name", "world_size", "tp", "pp", "dp", "cp", "ep", "etp", "order", "model"}));
    FrameworkModule m;
    CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("name").GetString(&m.name));
    CKPTSPEC_RETURN_IF_ERROR(LayoutMembersFromJson(e, &m.layout));
    const JsonField model = e.Member("model");
    CKPTSPEC_RETURN_IF_ERROR(model.ExpectPresent());
    CKPTSPEC_RETURN_IF_ERROR(ModelConfigFromJson(model, &m.model));
    if (model.OptionalMember("name").present()) return model.Error("the module names the model");
    m.model.name = m.name;
    job.modules.push_back(std::move(m));
    return Status::OK();
  }));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("frozen").ForEachElement([&](const JsonField& e) {
    std::string pattern;
    CKPTSPEC_RETURN_IF_ERROR(e.GetString(&pattern));
    job.frozen.push_back(std::move(pattern));
    return Status::OK();
  }));
  const JsonField optimizer = f.OptionalMember("optimizer");
  CKPTSPEC_RETURN_IF_ERROR(optimizer.ExpectOnlyMembers(
      {"distributed", "cpu_offload_fraction", "format", "weight_decay", "beta1", "beta2", "eps",
       "decoupled_lr", "decoupled_min_lr", "lr_mult_overrides", "lr_bound_overrides"}));
  CKPTSPEC_RETURN_IF_ERROR(
      optimizer.OptionalMember("distributed").GetBool(&job.optimizer.distributed));
  CKPTSPEC_RETURN_IF_ERROR(optimizer.OptionalMember("cpu_offload_fraction")
                               .GetDouble(&job.optimizer.cpu_offload_fraction));
  CKPTSPEC_RETURN_IF_ERROR(
      optimizer.OptionalMember("format").GetEnum(ParseOptimizerFormat, &job.optimizer.format));
  CKPTSPEC_RETURN_IF_ERROR(GroupingMembersFromJson(optimizer, &job.optimizer.grouping));
  CKPTSPEC_RETURN_IF_ERROR(SchedulerConfigFromJson(f.OptionalMember("scheduler"), &job.scheduler));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("global_batch_size").GetInt64(1, int64_t{1} << 40, &job.global_batch_size));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("rerun_mode").GetEnum(ParseRerunMode, &job.rerun_mode));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("assume_constant_structure").GetBool(&job.assume_constant_structure));
  const JsonField options = f.OptionalMember("options");
  CKPTSPEC_RETURN_IF_ERROR(options.ExpectObject());
  if (options.present()) {
    for (const auto& [name, value] : options.value().items()) {
      if (!value.is_boolean()) {
        return options.Error("option \"" + name + "\": expected a boolean, got " +
                             JsonPreview(value));
      }
      job.options[name] = value.get<bool>();
    }
  }
  const Status valid = ValidateFrameworkJob(job);
  if (!valid.ok()) return f.Error(valid.message());
  *out = std::move(job);
  return Status::OK();
}

std::string DescribeJob(const FrameworkJob& job) {
  std::ostringstream os;
  int64_t next = 0;
  for (const FrameworkModule& m : job.modules) {
    os << (m.name.empty() ? "" : "module '" + m.name + "' ") << "ranks [" << next << ", "
       << next + m.layout.world_size() << "): " << m.layout.ToString() << "; "
       << DescribeModel(m.model) << "\n  ";
    next += m.layout.world_size();
  }
  const FrameworkOptimizer& o = job.optimizer;
  os << "seed " << job.seed << "; optimizer " << (o.distributed ? "distributed" : "plain") << ", "
     << OptimizerFormatName(o.format);
  if (o.cpu_offload_fraction > 0) os << ", CPU offload " << o.cpu_offload_fraction;
  for (const LrMultOverride& x : o.grouping.lr_mult_overrides) {
    os << ", lr_mult " << x.lr_mult << " for *" << x.name_contains << "*";
  }
  for (const LrBoundOverride& x : o.grouping.lr_bound_overrides) {
    os << ", max_lr " << x.max_lr;
    if (x.min_lr) os << " min_lr " << *x.min_lr;
    os << " for *" << x.name_contains << "*";
  }
  if (o.grouping.decoupled_lr) os << ", decoupled lr " << *o.grouping.decoupled_lr;
  if (!job.frozen.empty()) {
    os << "; frozen:";
    for (const std::string& f : job.frozen) os << " *" << f << "*";
  }
  const SchedulerConfig& s = job.scheduler;
  os << "\n  scheduler " << LrDecayStyleName(s.lr_decay_style) << " " << s.max_lr << " -> "
     << s.min_lr << " over " << s.lr_decay_steps << " samples (warmup " << s.lr_warmup_steps
     << "); global batch " << job.global_batch_size << "; rerun " << RerunModeName(job.rerun_mode);
  if (job.assume_constant_structure) os << "; assume constant structure";
  for (const auto& [name, value] : job.options) os << "; " << name << "=" << (value ? "on" : "off");
  return os.str();
}

}  // namespace ckptspec
