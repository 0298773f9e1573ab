#include "properties/regression_case.h"

#include <set>

#include "model/json_util.h"
#include "properties/scenarios.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// Reads the fields of one JSON object, each optional, and reports an unknown field at Done().
// Errors are InvalidArgument "<path>.<field>: <what>".
class Reader {
 public:
  Reader(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) status_ = Bad("", std::string("is ") + JsonTypeName(j_) + ", not an object");
  }
  const Status& status() const { return status_; }

  const json* Field(const std::string& name) {
    known_.insert(name);
    if (!status_.ok() || !j_.contains(name)) return nullptr;
    return &j_.at(name);
  }
  template <typename T>
  void Int(const std::string& name, T* out) {
    const json* v = Field(name);
    if (!v) return;
    if (!v->is_number_integer()) return Fail(name, "is not an integer");
    *out = static_cast<T>(v->get<int64_t>());
  }
  void Double(const std::string& name, double* out) {
    const json* v = Field(name);
    if (!v) return;
    if (!v->is_number()) return Fail(name, "is not a number");
    *out = v->get<double>();
  }
  void OptionalDouble(const std::string& name, std::optional<double>* out) {
    const json* v = Field(name);
    if (!v) return;
    if (v->is_null()) return out->reset();
    if (!v->is_number()) return Fail(name, "is not a number or null");
    *out = v->get<double>();
  }
  void Bool(const std::string& name, bool* out) {
    const json* v = Field(name);
    if (!v) return;
    if (!v->is_boolean()) return Fail(name, "is not a boolean");
    *out = v->get<bool>();
  }
  void String(const std::string& name, std::string* out) {
    const json* v = Field(name);
    if (!v) return;
    if (!v->is_string()) return Fail(name, "is not a string");
    *out = v->get<std::string>();
  }
  // A string mapped through parse(text, out) -> bool.
  template <typename T, typename Parse>
  void Enum(const std::string& name, T* out, Parse parse) {
    std::string text;
    const bool present = j_.is_object() && j_.contains(name);
    String(name, &text);
    if (present && status_.ok() && !parse(text, out)) Fail(name, "unknown value \"" + text + "\"");
  }
  std::string Path(const std::string& name) const { return path_ + "." + name; }
  void Fail(const std::string& name, const std::string& what) {
    if (status_.ok()) status_ = Bad(name, what);
  }
  void Merge(const Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
  }
  Status Done() {
    if (!status_.ok()) return status_;
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (!known_.count(it.key())) return Bad(it.key(), "unknown field");
    }
    return Status::OK();
  }

 private:
  Status Bad(const std::string& name, const std::string& what) const {
    return Status::InvalidArgument((name.empty() ? path_ : Path(name)) + ": " + what);
  }
  const json& j_;
  std::string path_;
  std::set<std::string> known_;
  Status status_;
};

bool ParseDTypeName(const std::string& s, DType* d) { return ParseDType(s, d); }
bool ParseStepCounter(const std::string& s, StepCounter* c) {
  if (s == "per_parameter") *c = StepCounter::kPerParameter;
  else if (s == "per_group") *c = StepCounter::kPerGroup;
  else return false;
  return true;
}
const char* StepCounterName(StepCounter c) {
  return c == StepCounter::kPerGroup ? "per_group" : "per_parameter";
}
bool ParseChaining(const std::string& s, Chaining* c) {
  if (s == "single") *c = Chaining::kSingle;
  else if (s == "dense_expert") *c = Chaining::kDenseExpert;
  else return false;
  return true;
}
const char* ChainingName(Chaining c) { return c == Chaining::kDenseExpert ? "dense_expert" : "single"; }
const WsdDecayStyle kWsdStyles[] = {WsdDecayStyle::kLinear, WsdDecayStyle::kCosine,
                                    WsdDecayStyle::kExponential, WsdDecayStyle::kMinusSqrt};
const char* WsdName(WsdDecayStyle s) {
  switch (s) {
    case WsdDecayStyle::kLinear: return "linear";
    case WsdDecayStyle::kCosine: return "cosine";
    case WsdDecayStyle::kExponential: return "exponential";
    case WsdDecayStyle::kMinusSqrt: return "minus_sqrt";
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

Status ModelFromJson(const json& j, const std::string& path, ModelConfig* m) {
  Reader r(j, path);
  r.String("name", &m->name);
  r.Int("num_layers", &m->num_layers);
  r.Int("hidden_size", &m->hidden_size);
  r.Int("num_attention_heads", &m->num_attention_heads);
  r.Int("num_query_groups", &m->num_query_groups);
  r.Int("ffn_hidden_size", &m->ffn_hidden_size);
  r.Int("vocab_size", &m->vocab_size);
  r.Bool("gated_linear_unit", &m->gated_linear_unit);
  r.Bool("add_bias", &m->add_bias);
  r.Bool("tie_embeddings", &m->tie_embeddings);
  r.Int("num_experts", &m->num_experts);
  r.Int("moe_ffn_hidden_size", &m->moe_ffn_hidden_size);
  r.Int("moe_layer_freq", &m->moe_layer_freq);
  r.Enum("params_dtype", &m->params_dtype, ParseDTypeName);
  if (const json* split = r.Field("pipeline_split")) {
    Reader s(*split, r.Path("pipeline_split"));
    s.Int("first_stage_layers", &m->pipeline_split.first_stage_layers);
    s.Int("last_stage_layers", &m->pipeline_split.last_stage_layers);
    r.Merge(s.Done());
  }
  return r.Done();
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

Status TrainingFromJson(const json& j, const std::string& path, TrainingConfig* c) {
  Reader r(j, path);
  r.Int("seed", &c->seed);
  if (const json* o = r.Field("optimizer")) {
    Reader opt(*o, r.Path("optimizer"));
    OptimizerConfig& oc = c->optimizer;
    opt.Enum("step_counter", &oc.step_counter, ParseStepCounter);
    opt.Enum("chaining", &oc.chaining, ParseChaining);
    opt.Double("cpu_offload_fraction", &oc.cpu_offload_fraction);
    opt.Double("weight_decay", &oc.grouping.weight_decay);
    opt.Double("beta1", &oc.grouping.beta1);
    opt.Double("beta2", &oc.grouping.beta2);
    opt.Double("eps", &oc.grouping.eps);
    opt.OptionalDouble("decoupled_lr", &oc.grouping.decoupled_lr);
    opt.OptionalDouble("decoupled_min_lr", &oc.grouping.decoupled_min_lr);
    if (const json* list = opt.Field("lr_mult_overrides")) {
      if (!list->is_array()) {
        opt.Fail("lr_mult_overrides", "is not an array");
      } else {
        for (size_t i = 0; i < list->size(); ++i) {
          Reader e((*list)[i], opt.Path("lr_mult_overrides[" + std::to_string(i) + "]"));
          LrMultOverride o2;
          e.String("name_contains", &o2.name_contains);
          e.Double("lr_mult", &o2.lr_mult);
          opt.Merge(e.Done());
          oc.grouping.lr_mult_overrides.push_back(o2);
        }
      }
    }
    r.Merge(opt.Done());
  }
  if (const json* s = r.Field("scheduler")) {
    Reader sr(*s, r.Path("scheduler"));
    SchedulerConfig& sc = c->scheduler;
    sr.Double("init_lr", &sc.init_lr);
    sr.Double("max_lr", &sc.max_lr);
    sr.Double("min_lr", &sc.min_lr);
    sr.Int("lr_warmup_steps", &sc.lr_warmup_steps);
    sr.Int("lr_decay_steps", &sc.lr_decay_steps);
    sr.Enum("lr_decay_style", &sc.lr_decay_style, ParseLrDecayStyle);
    sr.Int("wsd_decay_steps", &sc.wsd_decay_steps);
    sr.Enum("lr_wsd_decay_style", &sc.lr_wsd_decay_style, ParseWsd);
    sr.Double("start_wd", &sc.start_wd);
    sr.Double("end_wd", &sc.end_wd);
    sr.Int("wd_incr_steps", &sc.wd_incr_steps);
    sr.Enum("wd_incr_style", &sc.wd_incr_style, ParseWdIncrStyle);
    r.Merge(sr.Done());
  }
  if (const json* d = r.Field("data")) {
    Reader dr(*d, r.Path("data"));
    dr.Int("num_samples", &c->data.num_samples);
    dr.Int("seed", &c->data.seed);
    dr.Bool("shuffle", &c->data.shuffle);
    dr.Int("global_batch_size", &c->data.global_batch_size);
    dr.Int("micro_batch_size", &c->data.micro_batch_size);
    r.Merge(dr.Done());
  }
  if (const json* f = r.Field("frozen")) {
    if (!f->is_array()) {
      r.Fail("frozen", "is not an array");
    } else {
      for (const json& name : *f) {
        if (!name.is_string()) {
          r.Fail("frozen", "holds a non-string");
          break;
        }
        c->frozen.push_back(name.get<std::string>());
      }
    }
  }
  r.Bool("data_parallel_random_init", &c->data_parallel_random_init);
  r.Enum("rerun_mode", &c->rerun_mode, ParseRerunMode);
  return r.Done();
}

json TrainingToJson(const TrainingConfig& c) {
  const OptimizerConfig& o = c.optimizer;
  json overrides = json::array();
  for (const LrMultOverride& x : o.grouping.lr_mult_overrides) {
    overrides.push_back({{"name_contains", x.name_contains}, {"lr_mult", x.lr_mult}});
  }
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  const SchedulerConfig& s = c.scheduler;
  return json{
      {"seed", c.seed},
      {"optimizer",
       {{"step_counter", StepCounterName(o.step_counter)},
        {"chaining", ChainingName(o.chaining)},
        {"cpu_offload_fraction", o.cpu_offload_fraction},
        {"weight_decay", o.grouping.weight_decay},
        {"beta1", o.grouping.beta1},
        {"beta2", o.grouping.beta2},
        {"eps", o.grouping.eps},
        {"decoupled_lr", opt(o.grouping.decoupled_lr)},
        {"decoupled_min_lr", opt(o.grouping.decoupled_min_lr)},
        {"lr_mult_overrides", overrides}}},
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
       {{"num_samples", c.data.num_samples},
        {"seed", c.data.seed},
        {"shuffle", c.data.shuffle},
        {"global_batch_size", c.data.global_batch_size},
        {"micro_batch_size", c.data.micro_batch_size}}},
      {"frozen", c.frozen},
      {"data_parallel_random_init", c.data_parallel_random_init},
      {"rerun_mode", RerunModeName(c.rerun_mode)}};
}

Status RunFromJson(const json& j, const std::string& path, RunSpec* run) {
  Reader r(j, path);
  std::vector<ModuleLayout> modules;
  run->configs.clear();
  const json* list = r.Field("modules");
  if (r.status().ok() && (!list || !list->is_array() || list->empty())) {
    r.Fail("modules", "must be a non-empty array");
  }
  int64_t next_rank = 0;
  for (size_t i = 0; r.status().ok() && i < list->size(); ++i) {
    const std::string mp = r.Path("modules[" + std::to_string(i) + "]");
    Reader mr((*list)[i], mp);
    ModuleLayout m;
    int64_t world = 0;
    ParallelSizes sizes;
    std::string order = "tp-cp-ep-dp-pp";
    mr.String("name", &m.name);
    mr.Int("world_size", &world);
    mr.Int("tp", &sizes.tp);
    mr.Int("pp", &sizes.pp);
    mr.Int("dp", &sizes.dp);
    mr.Int("cp", &sizes.cp);
    mr.Int("ep", &sizes.ep);
    mr.Int("etp", &sizes.etp);
    mr.String("order", &order);
    TrainingConfig config;
    if (const json* model = mr.Field("model")) {
      mr.Merge(ModelFromJson(*model, mp + ".model", &config.model));
    }
    if (const json* training = mr.Field("training")) {
      mr.Merge(TrainingFromJson(*training, mp + ".training", &config));
    }
    r.Merge(mr.Done());
    if (!r.status().ok()) break;
    RankOrder ro;
    Status s = RankOrder::Parse(order, &ro);
    if (s.ok()) s = Layout::Make(world, sizes, ro, &m.layout);
    if (s.ok()) s = ValidateModelForLayout(config.model, m.layout);
    if (!s.ok()) return Status::InvalidArgument(mp + ": " + s.message());
    config.model.name = m.name;
    config.data.dp_size = m.layout.dp();
    config.ranks.clear();
    for (int64_t rank = 0; rank < m.layout.world_size(); ++rank) {
      config.ranks.push_back(m.layout.Coords(rank));
    }
    s = ValidateTrainingConfig(config);
    if (!s.ok()) return Status::InvalidArgument(mp + ".training: " + s.message());
    m.first_rank = next_rank;
    next_rank += m.layout.world_size();
    modules.push_back(std::move(m));
    run->configs.push_back(std::move(config));
  }
  if (const json* sharding = r.Field("sharding")) {
    Reader sr(*sharding, r.Path("sharding"));
    sr.Enum("optimizer_format", &run->sharding.optimizer_format, ParseFormat);
    sr.Int("bucket_size", &run->sharding.buffers.bucket_size);
    sr.Int("param_alignment", &run->sharding.buffers.param_alignment);
    sr.Bool("chained_avoid_prefix", &run->sharding.chained_avoid_prefix);
    r.Merge(sr.Done());
  }
  CKPTSPEC_RETURN_IF_ERROR(r.Done());
  const Status s = HeterogeneousLayout::Make(std::move(modules), &run->layout);
  if (!s.ok()) return Status::InvalidArgument(path + ".modules: " + s.message());
  std::vector<TrainingState> states;
  const Status built = InitialStates(*run, &states);
  if (!built.ok()) return Status::InvalidArgument(path + ": the run does not build: " + built.message());
  return Status::OK();
}

}  // namespace

Status RegressionCaseFromJson(const json& j, RegressionCase* out) {
  Reader r(j, "regression");
  std::string format;
  r.String("format", &format);
  if (r.status().ok() && format != kRegressionFormat) {
    r.Fail("format", "is \"" + format + "\", expected \"" + kRegressionFormat + "\"");
  }
  RegressionCase c;
  r.String("name", &c.name);
  r.String("description", &c.description);
  r.String("property", &c.property);
  if (r.status().ok() && c.property != "P1" && c.property != "P2") {
    r.Fail("property", "is \"" + c.property + "\"; replay knows P1 and P2");
  }
  if (const json* p = r.Field("parameters")) {
    Reader pr(*p, r.Path("parameters"));
    pr.Int("train_before_save", &c.train_before_save);
    pr.Int("train_after_resume", &c.train_after_resume);
    pr.Bool("async", &c.async);
    if (pr.status().ok() && (c.train_before_save < 0 || c.train_after_resume < 0)) {
      pr.Fail("train_before_save", "iteration counts must not be negative");
    }
    r.Merge(pr.Done());
  }
  const json* run = r.Field("run");
  if (r.status().ok() && !run) r.Fail("run", "is missing");
  CKPTSPEC_RETURN_IF_ERROR(r.Done());
  CKPTSPEC_RETURN_IF_ERROR(RunFromJson(*run, "regression.run", &c.run));
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
