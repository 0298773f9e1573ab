#include "model/observation.h"

#include <sstream>
#include <utility>

#include "model/number_text.h"
#include "model/observation_digest.h"
#include "model/state_common.h"

namespace ckptspec {
namespace {

using nlohmann::json;

Status DigestsFromJson(const JsonField& f, Digests* out) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectObject());
  if (!f.present()) return Status::OK();
  for (const auto& [name, value] : f.value().items()) {
    if (name.empty()) return f.Error("a parameter without a name");
    uint64_t digest = 0;
    if (!value.is_string() || !ParseHexDigest(value.get<std::string>(), &digest)) {
      return f.Error("\"" + name.substr(0, 200) + "\": expected 16 hex digits, got " +
                     JsonPreview(value));
    }
    (*out)[name] = digest;
  }
  return Status::OK();
}

json DigestsToJson(const Digests& d) {
  json j = json::object();
  for (const auto& [name, digest] : d) j[name] = HexDigest(digest);
  return j;
}

Status HexMember(const JsonField& f, uint64_t* out) {
  std::string text;
  CKPTSPEC_RETURN_IF_ERROR(f.GetString(&text));
  if (!ParseHexDigest(text, out)) return f.Expected("16 hex digits");
  return Status::OK();
}

// The identity fields of a group, by member name, with how each is read.
Status IdentityFromJson(const JsonField& g, ParamGroupIdentity* id) {
  *id = ParamGroupIdentity();
  id->Remove(IdentityField::kLrBoundsDeclared);  // never observed
  const std::pair<IdentityField, double ParamGroupIdentity::*> numbers[] = {
      {IdentityField::kWdMult, &ParamGroupIdentity::wd_mult},
      {IdentityField::kLrMult, &ParamGroupIdentity::lr_mult}};
  for (const auto& [field, member] : numbers) {
    const JsonField v = g.OptionalMember(IdentityFieldName(field));
    if (!v.present()) {
      id->Remove(field);
      continue;
    }
    CKPTSPEC_RETURN_IF_ERROR(v.GetDouble(&(id->*member)));
  }
  const std::pair<IdentityField, bool ParamGroupIdentity::*> switches[] = {
      {IdentityField::kIsExpertParallel, &ParamGroupIdentity::is_expert_parallel},
      {IdentityField::kIsDecoupledLr, &ParamGroupIdentity::is_decoupled_lr}};
  for (const auto& [field, member] : switches) {
    const JsonField v = g.OptionalMember(IdentityFieldName(field));
    if (!v.present()) {
      id->Remove(field);
      continue;
    }
    CKPTSPEC_RETURN_IF_ERROR(v.GetBool(&(id->*member)));
  }
  const std::pair<IdentityField, std::optional<double> ParamGroupIdentity::*> bounds[] = {
      {IdentityField::kMaxLr, &ParamGroupIdentity::max_lr},
      {IdentityField::kMinLr, &ParamGroupIdentity::min_lr}};
  for (const auto& [field, member] : bounds) {
    const JsonField v = g.OptionalMember(IdentityFieldName(field));
    if (!v.present()) {
      id->Remove(field);
      continue;
    }
    CKPTSPEC_RETURN_IF_ERROR(v.GetDoubleOrNull(&(id->*member)));
  }
  return Status::OK();
}

Status GroupFromJson(const JsonField& g, GroupObservation* out) {
  CKPTSPEC_RETURN_IF_ERROR(g.ExpectOnlyMembers(
      {"optimizer", "params", "lr", "weight_decay", "beta1", "beta2", "eps", "step", "wd_mult",
       "lr_mult", "is_expert_parallel", "is_decoupled_lr", "max_lr", "min_lr"}));
  CKPTSPEC_RETURN_IF_ERROR(g.Member("optimizer").GetString(&out->optimizer));
  CKPTSPEC_RETURN_IF_ERROR(g.Member("params").ForEachElement([&](const JsonField& e) {
    std::string name;
    CKPTSPEC_RETURN_IF_ERROR(e.GetString(&name));
    out->params.push_back(std::move(name));
    return Status::OK();
  }));
  CKPTSPEC_RETURN_IF_ERROR(g.Member("lr").GetDouble(&out->lr));
  CKPTSPEC_RETURN_IF_ERROR(g.Member("weight_decay").GetDouble(&out->weight_decay));
  CKPTSPEC_RETURN_IF_ERROR(g.Member("beta1").GetDouble(&out->beta1));
  CKPTSPEC_RETURN_IF_ERROR(g.Member("beta2").GetDouble(&out->beta2));
  CKPTSPEC_RETURN_IF_ERROR(g.Member("eps").GetDouble(&out->eps));
  const JsonField step = g.OptionalMember("step");
  if (step.present() && !step.value().is_null()) {
    int64_t value = 0;
    CKPTSPEC_RETURN_IF_ERROR(step.GetNonNegativeInt64(&value));
    out->step = value;
  }
  return IdentityFromJson(g, &out->identity);
}

json GroupToJson(const GroupObservation& g) {
  json j{{"optimizer", g.optimizer},
         {"params", g.params},
         {"lr", g.lr},
         {"weight_decay", g.weight_decay},
         {"beta1", g.beta1},
         {"beta2", g.beta2},
         {"eps", g.eps},
         {"step", g.step ? json(*g.step) : json(nullptr)}};
  ParamGroupIdentity id = g.identity;
  id.Remove(IdentityField::kLrBoundsDeclared);  // not observed
  IdentityToJson(id, &j);
  return j;
}

Status SchedulerFromJson(const JsonField& f, SchedulerState* out) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers({"num_steps", "max_lr", "min_lr", "lr_warmup_steps",
                                                "lr_decay_steps", "lr_decay_style", "start_wd",
                                                "end_wd", "wd_incr_steps", "wd_incr_style"}));
  SchedulerConfig& c = out->config;
  CKPTSPEC_RETURN_IF_ERROR(f.Member("num_steps").GetNonNegativeInt64(&out->num_steps));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("max_lr").GetDouble(&c.max_lr));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("min_lr").GetDouble(&c.min_lr));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("lr_warmup_steps").GetInt(&c.lr_warmup_steps));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("lr_decay_steps").GetInt(&c.lr_decay_steps));
  CKPTSPEC_RETURN_IF_ERROR(
      f.Member("lr_decay_style").GetEnum(ParseLrDecayStyle, &c.lr_decay_style));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("start_wd").GetDouble(&c.start_wd));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("end_wd").GetDouble(&c.end_wd));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("wd_incr_steps").GetInt(&c.wd_incr_steps));
  return f.Member("wd_incr_style").GetEnum(ParseWdIncrStyle, &c.wd_incr_style);
}

json SchedulerToJson(const SchedulerState& s) {
  const SchedulerConfig& c = s.config;
  return json{{"num_steps", s.num_steps},
              {"max_lr", c.max_lr},
              {"min_lr", c.min_lr},
              {"lr_warmup_steps", c.lr_warmup_steps},
              {"lr_decay_steps", c.lr_decay_steps},
              {"lr_decay_style", LrDecayStyleName(c.lr_decay_style)},
              {"start_wd", c.start_wd},
              {"end_wd", c.end_wd},
              {"wd_incr_steps", c.wd_incr_steps},
              {"wd_incr_style", WdIncrStyleName(c.wd_incr_style)}};
}

template <typename T>
std::string Show(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
std::string Show(double v) { return ExactDecimal(v); }
std::string Show(bool v) { return v ? "true" : "false"; }
std::string Show(const std::optional<double>& v) { return v ? ExactDecimal(*v) : "None"; }
std::string Show(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "None"; }
std::string Show(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "]";
}

// "what a vs b" when they differ, else "".
template <typename T>
std::string Differ(const std::string& what, const T& a, const T& b) {
  if (a == b) return "";
  return what + " " + Show(a) + " vs " + Show(b);
}

std::string DigestsDifference(const std::string& what, const Digests& a, const Digests& b) {
  for (const auto& [name, digest] : a) {
    const auto it = b.find(name);
    if (it == b.end()) return what + " of " + name + ": present vs absent";
    if (it->second != digest) {
      return what + " of " + name + ": " + HexDigest(digest) + " vs " + HexDigest(it->second);
    }
  }
  for (const auto& [name, digest] : b) {
    if (!a.count(name)) return what + " of " + name + ": absent vs present";
  }
  return "";
}

std::string IdentityDifference(const ParamGroupIdentity& a, const ParamGroupIdentity& b) {
  for (int f = 0; f < kNumIdentityFields; ++f) {
    const IdentityField field = static_cast<IdentityField>(f);
    if (a.Has(field) != b.Has(field)) {
      return std::string(IdentityFieldName(field)) +
             (a.Has(field) ? " present vs absent" : " absent vs present");
    }
  }
  std::string d;
  if ((d = Differ("wd_mult", a.wd_mult, b.wd_mult)).size()) return d;
  if ((d = Differ("lr_mult", a.lr_mult, b.lr_mult)).size()) return d;
  if ((d = Differ("is_expert_parallel", a.is_expert_parallel, b.is_expert_parallel)).size()) {
    return d;
  }
  if ((d = Differ("is_decoupled_lr", a.is_decoupled_lr, b.is_decoupled_lr)).size()) return d;
  if ((d = Differ("max_lr", a.max_lr, b.max_lr)).size()) return d;
  return Differ("min_lr", a.min_lr, b.min_lr);
}

std::string GroupDifference(const GroupObservation& a, const GroupObservation& b) {
  const std::string d = Differ("params", a.params, b.params);
  return d.empty() ? GroupFieldsDifference(a, b) : d;
}

}  // namespace

std::string GroupFieldsDifference(const GroupObservation& a, const GroupObservation& b) {
  std::string d;
  if ((d = Differ("optimizer", a.optimizer, b.optimizer)).size()) return d;
  if ((d = Differ("lr", a.lr, b.lr)).size()) return d;
  if ((d = Differ("weight_decay", a.weight_decay, b.weight_decay)).size()) return d;
  if ((d = Differ("beta1", a.beta1, b.beta1)).size()) return d;
  if ((d = Differ("beta2", a.beta2, b.beta2)).size()) return d;
  if ((d = Differ("eps", a.eps, b.eps)).size()) return d;
  if ((d = Differ("step", a.step, b.step)).size()) return d;
  return IdentityDifference(a.identity, b.identity);
}

namespace {

std::string RankDifference(const RankObservation& a, const RankObservation& b) {
  std::string d;
  if ((d = Differ("iteration", a.iteration, b.iteration)).size()) return d;
  for (Copy c : kCopies) {
    if ((d = DigestsDifference(CopyName(c), a.copy(c), b.copy(c))).size()) return d;
  }
  for (const auto& [name, step] : a.param_steps) {
    const auto it = b.param_steps.find(name);
    const std::optional<int64_t> other =
        it == b.param_steps.end() ? std::nullopt : std::optional<int64_t>(it->second);
    if ((d = Differ("step of " + name, std::optional<int64_t>(step), other)).size()) return d;
  }
  for (const auto& [name, step] : b.param_steps) {
    if (!a.param_steps.count(name)) return "step of " + name + ": absent vs " + Show(step);
  }
  if (a.groups.size() != b.groups.size()) {
    return "param groups: " + Show(a.groups.size()) + " vs " + Show(b.groups.size());
  }
  for (size_t g = 0; g < a.groups.size(); ++g) {
    if ((d = GroupDifference(a.groups[g], b.groups[g])).size()) {
      return "param group " + Show(g) + " (" + Show(a.groups[g].params) + "): " + d;
    }
  }
  if (a.scheduler.has_value() != b.scheduler.has_value()) {
    return std::string("scheduler ") + (a.scheduler ? "present vs absent" : "absent vs present");
  }
  if (a.scheduler && (d = SchedulerDifference(*a.scheduler, *b.scheduler)).size()) {
    return "scheduler " + d;
  }
  if (a.rng != b.rng) return "rng " + HexDigest(a.rng) + " vs " + HexDigest(b.rng);
  if ((d = Differ("consumed_samples", a.consumed_samples, b.consumed_samples)).size()) return d;
  if ((d = Differ("rerun mode", a.rerun.mode, b.rerun.mode)).size()) return d;
  if ((d = Differ("rerun state", a.rerun.state, b.rerun.state)).size()) return d;
  if ((d = Differ("rerun current_iteration", a.rerun.current_iteration, b.rerun.current_iteration))
          .size()) {
    return d;
  }
  if (a.rerun.digest != b.rerun.digest) {
    return "rerun payload " + HexDigest(a.rerun.digest) + " vs " + HexDigest(b.rerun.digest);
  }
  return "";
}

}  // namespace

const char* CopyName(Copy copy) {
  switch (copy) {
    case Copy::kModel:
      return "model";
    case Copy::kMain:
      return "main";
    case Copy::kOffload:
      return "offload";
    case Copy::kExpAvg:
      return "exp_avg";
    case Copy::kExpAvgSq:
      return "exp_avg_sq";
  }
  return "?";
}

Status RankObservationFromJson(const JsonField& f, RankObservation* out) {
  RankObservation o;
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers({"iteration", "model", "main", "offload", "exp_avg",
                                                "exp_avg_sq", "param_steps", "groups", "scheduler",
                                                "rng", "consumed_samples", "rerun"}));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("iteration").GetNonNegativeInt64(&o.iteration));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("model").ExpectPresent());
  for (Copy c : kCopies) {
    CKPTSPEC_RETURN_IF_ERROR(DigestsFromJson(f.OptionalMember(CopyName(c)), &o.copy(c)));
  }
  const JsonField steps = f.OptionalMember("param_steps");
  CKPTSPEC_RETURN_IF_ERROR(steps.ExpectObject());
  if (steps.present()) {
    for (const auto& [name, value] : steps.value().items()) {
      if (!value.is_number_integer() || value.get<int64_t>() < 0) {
        return steps.Error("\"" + name.substr(0, 200) +
                           "\": expected a non-negative integer, got " + JsonPreview(value));
      }
      o.param_steps[name] = value.get<int64_t>();
    }
  }
  CKPTSPEC_RETURN_IF_ERROR(f.Member("groups").ForEachElement([&](const JsonField& g) {
    GroupObservation group;
    CKPTSPEC_RETURN_IF_ERROR(GroupFromJson(g, &group));
    o.groups.push_back(std::move(group));
    return Status::OK();
  }));
  const JsonField scheduler = f.OptionalMember("scheduler");
  if (scheduler.present()) {
    SchedulerState s;
    CKPTSPEC_RETURN_IF_ERROR(SchedulerFromJson(scheduler, &s));
    o.scheduler = s;
  }
  CKPTSPEC_RETURN_IF_ERROR(HexMember(f.Member("rng"), &o.rng));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("consumed_samples").GetNonNegativeInt64(&o.consumed_samples));
  const JsonField rerun = f.Member("rerun");
  CKPTSPEC_RETURN_IF_ERROR(
      rerun.ExpectOnlyMembers({"mode", "state", "current_iteration", "digest"}));
  CKPTSPEC_RETURN_IF_ERROR(rerun.Member("mode").GetString(&o.rerun.mode));
  CKPTSPEC_RETURN_IF_ERROR(rerun.Member("state").GetString(&o.rerun.state));
  CKPTSPEC_RETURN_IF_ERROR(
      rerun.Member("current_iteration").GetNonNegativeInt64(&o.rerun.current_iteration));
  CKPTSPEC_RETURN_IF_ERROR(HexMember(rerun.Member("digest"), &o.rerun.digest));
  *out = std::move(o);
  return Status::OK();
}

json RankObservationToJson(const RankObservation& o) {
  json j{{"iteration", o.iteration}};
  for (Copy c : kCopies) j[CopyName(c)] = DigestsToJson(o.copy(c));
  json steps = json::object();
  for (const auto& [name, step] : o.param_steps) steps[name] = step;
  j["param_steps"] = std::move(steps);
  json groups = json::array();
  for (const GroupObservation& g : o.groups) groups.push_back(GroupToJson(g));
  j["groups"] = std::move(groups);
  if (o.scheduler) j["scheduler"] = SchedulerToJson(*o.scheduler);
  j["rng"] = HexDigest(o.rng);
  j["consumed_samples"] = o.consumed_samples;
  j["rerun"] = {{"mode", o.rerun.mode},
                {"state", o.rerun.state},
                {"current_iteration", o.rerun.current_iteration},
                {"digest", HexDigest(o.rerun.digest)}};
  return j;
}

Digests GlobalDigests(const Observation& observation, Copy c) {
  Digests sum;
  for (const RankObservation& rank : observation) {
    for (const auto& [name, digest] : rank.copy(c)) sum[name] += digest;
  }
  return sum;
}

std::string SchedulerDifference(const SchedulerState& a, const SchedulerState& b) {
  const SchedulerConfig &x = a.config, &y = b.config;
  std::string d;
  if ((d = Differ("num_steps", a.num_steps, b.num_steps)).size()) return d;
  if ((d = Differ("max_lr", x.max_lr, y.max_lr)).size()) return d;
  if ((d = Differ("min_lr", x.min_lr, y.min_lr)).size()) return d;
  if ((d = Differ("lr_warmup_steps", x.lr_warmup_steps, y.lr_warmup_steps)).size()) return d;
  if ((d = Differ("lr_decay_steps", x.lr_decay_steps, y.lr_decay_steps)).size()) return d;
  if (x.lr_decay_style != y.lr_decay_style) {
    return std::string("lr_decay_style ") + LrDecayStyleName(x.lr_decay_style) + " vs " +
           LrDecayStyleName(y.lr_decay_style);
  }
  if ((d = Differ("start_wd", x.start_wd, y.start_wd)).size()) return d;
  if ((d = Differ("end_wd", x.end_wd, y.end_wd)).size()) return d;
  if ((d = Differ("wd_incr_steps", x.wd_incr_steps, y.wd_incr_steps)).size()) return d;
  if (x.wd_incr_style != y.wd_incr_style) {
    return std::string("wd_incr_style ") + WdIncrStyleName(x.wd_incr_style) + " vs " +
           WdIncrStyleName(y.wd_incr_style);
  }
  return "";
}

std::string FirstObservationDifference(const Observation& a, const Observation& b) {
  if (a.size() != b.size()) return "ranks " + Show(a.size()) + " vs " + Show(b.size());
  for (size_t r = 0; r < a.size(); ++r) {
    const std::string d = RankDifference(a[r], b[r]);
    if (!d.empty()) return "rank " + Show(r) + ": " + d;
  }
  return "";
}

}  // namespace ckptspec
