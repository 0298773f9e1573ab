#include "model/framework_support.h"

#include <algorithm>
#include <iterator>

namespace ckptspec {
namespace {

using nlohmann::json;

template <size_t N>
bool Known(const char* const (&names)[N], const std::string& name) {
  return std::find_if(std::begin(names), std::end(names),
                      [&](const char* n) { return name == n; }) != std::end(names);
}

// A list of names, each one of `names`.
template <size_t N>
Status NameSet(const JsonField& f, const char* const (&names)[N], std::set<std::string>* out) {
  return f.ForEachElement([&](const JsonField& e) {
    std::string name;
    CKPTSPEC_RETURN_IF_ERROR(e.GetString(&name));
    if (!Known(names, name)) return e.Error("unknown value " + JsonPreview(e.value()));
    out->insert(name);
    return Status::OK();
  });
}

template <typename T, typename Parse>
Status EnumList(const JsonField& f, Parse parse, std::vector<T>* out) {
  return f.ForEachElement([&](const JsonField& e) {
    T value{};
    CKPTSPEC_RETURN_IF_ERROR(e.GetEnum(parse, &value));
    out->push_back(value);
    return Status::OK();
  });
}

bool ParseDTypeName(const std::string& s, DType* d) {
  return ParseDType(s, d) &&
         (*d == DType::kFloat32 || *d == DType::kBFloat16 || *d == DType::kFloat16);
}

Status StringList(const JsonField& f, std::vector<std::string>* out) {
  return f.ForEachElement([&](const JsonField& e) {
    std::string s;
    CKPTSPEC_RETURN_IF_ERROR(e.GetString(&s));
    out->push_back(std::move(s));
    return Status::OK();
  });
}

Status Lacks(const std::string& what) {
  return Status::NotSupported("the adapter does not declare " + what);
}

// The load flags with their protocol names.
const std::pair<const char*, bool LoadFlags::*> kFlags[] = {
    {"finetune", &LoadFlags::finetune},
    {"no_load_optim", &LoadFlags::no_load_optim},
    {"no_load_rng", &LoadFlags::no_load_rng},
    {"override_scheduler", &LoadFlags::override_scheduler},
    {"use_checkpoint_scheduler", &LoadFlags::use_checkpoint_scheduler},
};

}  // namespace

Status FrameworkSupportFromJson(const JsonField& f, FrameworkSupport* out) {
  FrameworkSupport s;
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers(
      {"library", "max_world_size", "parallelism", "max_modules", "dtypes", "model", "optimizer",
       "optimizer_formats", "load_flags", "rerun_modes", "signatures", "options", "fidelity"}));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("library").GetString(&s.library));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("max_world_size").GetInt(&s.max_world_size));
  if (s.max_world_size < 1 || s.max_world_size > kMaxFrameworkWorld) {
    return f.Member("max_world_size").OutOfRange(s.max_world_size, 1, kMaxFrameworkWorld);
  }
  CKPTSPEC_RETURN_IF_ERROR(NameSet(f.Member("parallelism"), kParallelismNames, &s.parallelism));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("max_modules").GetInt(&s.max_modules));
  if (s.max_modules < 1 || s.max_modules > kMaxFrameworkWorld) {
    return f.Member("max_modules").OutOfRange(s.max_modules, 1, kMaxFrameworkWorld);
  }
  CKPTSPEC_RETURN_IF_ERROR(EnumList(f.Member("dtypes"), ParseDTypeName, &s.dtypes));
  if (s.dtypes.empty()) return f.Member("dtypes").Expected("at least one dtype");
  CKPTSPEC_RETURN_IF_ERROR(NameSet(f.Member("model"), kModelFeatureNames, &s.model));
  CKPTSPEC_RETURN_IF_ERROR(NameSet(f.Member("optimizer"), kOptimizerFeatureNames, &s.optimizer));
  CKPTSPEC_RETURN_IF_ERROR(
      EnumList(f.Member("optimizer_formats"), ParseOptimizerFormat, &s.optimizer_formats));
  if (s.optimizer_formats.empty()) {
    return f.Member("optimizer_formats").Expected("at least one format");
  }
  CKPTSPEC_RETURN_IF_ERROR(NameSet(f.Member("load_flags"), kLoadFlagNames, &s.load_flags));
  CKPTSPEC_RETURN_IF_ERROR(EnumList(f.Member("rerun_modes"), ParseRerunMode, &s.rerun_modes));
  if (s.rerun_modes.empty()) return f.Member("rerun_modes").Expected("at least one mode");
  CKPTSPEC_RETURN_IF_ERROR(f.Member("signatures").GetBool(&s.signatures));
  const JsonField options = f.Member("options");
  CKPTSPEC_RETURN_IF_ERROR(options.ExpectObject());
  for (const auto& [name, kind] : options.value().items()) {
    if (!kind.is_string() || kind.get<std::string>() != "bool") {
      return options.Error("option \"" + name + "\": expected \"bool\", got " + JsonPreview(kind));
    }
    s.options.push_back(name);
  }
  CKPTSPEC_RETURN_IF_ERROR(StringList(f.Member("fidelity"), &s.fidelity));
  *out = std::move(s);
  return Status::OK();
}

json FrameworkSupportToJson(const FrameworkSupport& s) {
  json dtypes = json::array(), formats = json::array(), modes = json::array();
  for (DType d : s.dtypes) dtypes.push_back(DTypeName(d));
  for (OptimizerFormat f : s.optimizer_formats) formats.push_back(OptimizerFormatName(f));
  for (RerunMode m : s.rerun_modes) modes.push_back(RerunModeName(m));
  json options = json::object();
  for (const std::string& o : s.options) options[o] = "bool";
  return json{{"library", s.library},
              {"max_world_size", s.max_world_size},
              {"parallelism", s.parallelism},
              {"max_modules", s.max_modules},
              {"dtypes", dtypes},
              {"model", s.model},
              {"optimizer", s.optimizer},
              {"optimizer_formats", formats},
              {"load_flags", s.load_flags},
              {"rerun_modes", modes},
              {"signatures", s.signatures},
              {"options", options},
              {"fidelity", s.fidelity}};
}

Status CheckJobSupported(const FrameworkSupport& s, const FrameworkJob& job) {
  if (job.world_size() > s.max_world_size) {
    return Lacks("jobs of " + std::to_string(job.world_size()) + " ranks (max_world_size " +
                 std::to_string(s.max_world_size) + ")");
  }
  if (static_cast<int>(job.modules.size()) > s.max_modules) {
    return Lacks(std::to_string(job.modules.size()) + " modules");
  }
  for (const FrameworkModule& m : job.modules) {
    const Layout& l = m.layout;
    for (const auto& [name, size] : {std::make_pair("tp", l.tp()), std::make_pair("pp", l.pp()),
                                     std::make_pair("cp", l.cp()), std::make_pair("ep", l.ep())}) {
      if (size > 1 && !s.Has(s.parallelism, name)) return Lacks(std::string(name) + " > 1");
    }
    const ModelConfig& c = m.model;
    if (std::find(s.dtypes.begin(), s.dtypes.end(), c.params_dtype) == s.dtypes.end()) {
      return Lacks(std::string("dtype ") + DTypeName(c.params_dtype));
    }
    const std::pair<bool, const char*> features[] = {
        {c.gated_linear_unit, "gated_linear_unit"},
        {c.add_bias, "add_bias"},
        {!c.tie_embeddings, "untied_embeddings"},
        {c.num_query_groups > 0 && c.num_query_groups != c.num_attention_heads, "query_groups"},
        {c.num_experts > 0, "moe"},
        {c.pipeline_split.first_stage_layers >= 0 || c.pipeline_split.last_stage_layers >= 0,
         "pipeline_split"}};
    for (const auto& [used, name] : features) {
      if (used && !s.Has(s.model, name)) return Lacks(std::string("model feature ") + name);
    }
  }
  const FrameworkOptimizer& o = job.optimizer;
  const std::pair<bool, const char*> features[] = {
      {o.distributed, "distributed"},
      {o.cpu_offload_fraction > 0, "cpu_offload"},
      {!o.grouping.lr_mult_overrides.empty(), "lr_mult"},
      {!o.grouping.lr_bound_overrides.empty(), "lr_bounds"},
      {o.grouping.decoupled_lr.has_value(), "decoupled_lr"},
      {!job.frozen.empty(), "frozen"}};
  for (const auto& [used, name] : features) {
    if (used && !s.Has(s.optimizer, name)) return Lacks(std::string("optimizer feature ") + name);
  }
  if (std::find(s.optimizer_formats.begin(), s.optimizer_formats.end(), o.format) ==
      s.optimizer_formats.end()) {
    return Lacks(std::string("optimizer format ") + OptimizerFormatName(o.format));
  }
  if (std::find(s.rerun_modes.begin(), s.rerun_modes.end(), job.rerun_mode) ==
      s.rerun_modes.end()) {
    return Lacks(std::string("rerun mode ") + RerunModeName(job.rerun_mode));
  }
  for (const auto& [name, value] : job.options) {
    if (std::find(s.options.begin(), s.options.end(), name) == s.options.end()) {
      return Lacks("option " + name);
    }
  }
  return Status::OK();
}

Status CheckLoadFlagsSupported(const FrameworkSupport& s, const LoadFlags& flags) {
  if (flags.reset_dataloader) return Lacks("reset_dataloader (no framework load flag)");
  for (const auto& [name, member] : kFlags) {
    if (flags.*member && !s.Has(s.load_flags, name)) return Lacks(std::string("flag ") + name);
  }
  return Status::OK();
}

json LoadFlagsToJson(const LoadFlags& flags) {
  json j = json::object();
  for (const auto& [name, member] : kFlags) j[name] = flags.*member;
  return j;
}

Status LoadFlagsFromJson(const JsonField& f, LoadFlags* out) {
  LoadFlags flags;
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers({"finetune", "no_load_optim", "no_load_rng",
                                                "override_scheduler", "use_checkpoint_scheduler"}));
  for (const auto& [name, member] : kFlags) {
    CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember(name).GetBool(&(flags.*member)));
  }
  *out = flags;
  return Status::OK();
}

}  // namespace ckptspec
