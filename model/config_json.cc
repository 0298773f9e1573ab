#include "model/config_json.h"

#include <optional>
#include <utility>

namespace ckptspec {
namespace {

using nlohmann::json;

bool ParseDTypeName(const std::string& s, DType* d) { return ParseDType(s, d); }

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

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

}  // namespace

Status LayoutMembersFromJson(const JsonField& f, Layout* out) {
  int64_t world = 0;
  ParallelSizes sizes;
  std::string order = "tp-cp-ep-dp-pp";
  CKPTSPEC_RETURN_IF_ERROR(f.Member("world_size").GetInt64(&world));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("tp").GetInt64(&sizes.tp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("pp").GetInt64(&sizes.pp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("dp").GetInt64(&sizes.dp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("cp").GetInt64(&sizes.cp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("ep").GetInt64(&sizes.ep));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("etp").GetInt64(&sizes.etp));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("order").GetString(&order));
  RankOrder ro;
  Status s = RankOrder::Parse(order, &ro);
  if (s.ok()) s = Layout::Make(world, sizes, ro, out);
  if (!s.ok()) return f.Error(s.message());
  return Status::OK();
}

void LayoutMembersToJson(const Layout& l, json* object) {
  (*object)["world_size"] = l.world_size();
  (*object)["tp"] = l.tp();
  (*object)["pp"] = l.pp();
  (*object)["dp"] = l.dp();
  (*object)["cp"] = l.cp();
  (*object)["ep"] = l.ep();
  (*object)["etp"] = l.etp();
  (*object)["order"] = l.order().ToString();
}

Status ModelConfigFromJson(const JsonField& f, ModelConfig* m) {
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

json ModelConfigToJson(const ModelConfig& m) {
  json j{{"name", m.name}};
  for (const auto& [name, member] : kModelIntegers) j[name] = m.*member;
  for (const auto& [name, member] : kModelSwitches) j[name] = m.*member;
  j["params_dtype"] = DTypeName(m.params_dtype);
  j["pipeline_split"] = {{"first_stage_layers", m.pipeline_split.first_stage_layers},
                         {"last_stage_layers", m.pipeline_split.last_stage_layers}};
  return j;
}

Status GroupingMembersFromJson(const JsonField& f, GroupingConfig* g) {
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("weight_decay").GetDouble(&g->weight_decay));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("beta1").GetDouble(&g->beta1));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("beta2").GetDouble(&g->beta2));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("eps").GetDouble(&g->eps));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("decoupled_lr").GetDoubleOrNull(&g->decoupled_lr));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("decoupled_min_lr").GetDoubleOrNull(&g->decoupled_min_lr));
  CKPTSPEC_RETURN_IF_ERROR(
      f.OptionalMember("lr_mult_overrides").ForEachElement([&](const JsonField& e) {
        CKPTSPEC_RETURN_IF_ERROR(e.ExpectOnlyMembers({"name_contains", "lr_mult"}));
        LrMultOverride o;
        CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("name_contains").GetString(&o.name_contains));
        CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("lr_mult").GetDouble(&o.lr_mult));
        g->lr_mult_overrides.push_back(o);
        return Status::OK();
      }));
  return f.OptionalMember("lr_bound_overrides").ForEachElement([&](const JsonField& e) {
    CKPTSPEC_RETURN_IF_ERROR(e.ExpectOnlyMembers({"name_contains", "max_lr", "min_lr"}));
    LrBoundOverride o;
    CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("name_contains").GetString(&o.name_contains));
    CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("max_lr").GetDouble(&o.max_lr));
    CKPTSPEC_RETURN_IF_ERROR(e.OptionalMember("min_lr").GetDoubleOrNull(&o.min_lr));
    g->lr_bound_overrides.push_back(o);
    return Status::OK();
  });
}

void GroupingMembersToJson(const GroupingConfig& g, json* object) {
  json mults = json::array();
  for (const LrMultOverride& x : g.lr_mult_overrides) {
    mults.push_back({{"name_contains", x.name_contains}, {"lr_mult", x.lr_mult}});
  }
  json bounds = json::array();
  for (const LrBoundOverride& x : g.lr_bound_overrides) {
    bounds.push_back(
        {{"name_contains", x.name_contains}, {"max_lr", x.max_lr}, {"min_lr", Optional(x.min_lr)}});
  }
  (*object)["weight_decay"] = g.weight_decay;
  (*object)["beta1"] = g.beta1;
  (*object)["beta2"] = g.beta2;
  (*object)["eps"] = g.eps;
  (*object)["decoupled_lr"] = Optional(g.decoupled_lr);
  (*object)["decoupled_min_lr"] = Optional(g.decoupled_min_lr);
  (*object)["lr_mult_overrides"] = std::move(mults);
  (*object)["lr_bound_overrides"] = std::move(bounds);
}

Status SchedulerConfigFromJson(const JsonField& f, SchedulerConfig* sc) {
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
      f.OptionalMember("lr_wsd_decay_style").GetEnum(ParseWsdDecayStyle, &sc->lr_wsd_decay_style));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("start_wd").GetDouble(&sc->start_wd));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("end_wd").GetDouble(&sc->end_wd));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("wd_incr_steps").GetInt(&sc->wd_incr_steps));
  return f.OptionalMember("wd_incr_style").GetEnum(ParseWdIncrStyle, &sc->wd_incr_style);
}

json SchedulerConfigToJson(const SchedulerConfig& s) {
  return json{{"init_lr", s.init_lr},
              {"max_lr", s.max_lr},
              {"min_lr", s.min_lr},
              {"lr_warmup_steps", s.lr_warmup_steps},
              {"lr_decay_steps", s.lr_decay_steps},
              {"lr_decay_style", LrDecayStyleName(s.lr_decay_style)},
              {"wsd_decay_steps", s.wsd_decay_steps},
              {"lr_wsd_decay_style", WsdDecayStyleName(s.lr_wsd_decay_style)},
              {"start_wd", s.start_wd},
              {"end_wd", s.end_wd},
              {"wd_incr_steps", s.wd_incr_steps},
              {"wd_incr_style", WdIncrStyleName(s.wd_incr_style)}};
}

}  // namespace ckptspec
