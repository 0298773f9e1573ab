#include "model/state_common.h"

#include <limits>

namespace ckptspec {

namespace {

using nlohmann::json;

Status Field(const json& j, const char* name, const std::string& where, const json** out) {
  if (!j.is_object()) return Status::Corruption(where + " is not an object");
  auto it = j.find(name);
  if (it == j.end()) return Status::Corruption(where + " lacks '" + name + "'");
  *out = &*it;
  return Status::OK();
}

Status Number(const json& j, const char* name, const std::string& where, double* out) {
  const json* f = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(Field(j, name, where, &f));
  if (!f->is_number()) return Status::Corruption(where + ": '" + name + "' is not a number");
  *out = f->get<double>();
  return Status::OK();
}

Status Integer(const json& j, const char* name, const std::string& where, int64_t* out) {
  const json* f = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(Field(j, name, where, &f));
  if (!f->is_number_integer())
    return Status::Corruption(where + ": '" + name + "' is not an integer");
  *out = f->get<int64_t>();
  return Status::OK();
}

Status Bool(const json& j, const char* name, const std::string& where, bool* out) {
  const json* f = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(Field(j, name, where, &f));
  if (!f->is_boolean()) return Status::Corruption(where + ": '" + name + "' is not a boolean");
  *out = f->get<bool>();
  return Status::OK();
}

Status String(const json& j, const char* name, const std::string& where, std::string* out) {
  const json* f = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(Field(j, name, where, &f));
  if (!f->is_string()) return Status::Corruption(where + ": '" + name + "' is not a string");
  *out = f->get<std::string>();
  return Status::OK();
}

Status OptionalBound(const json& j, const char* name, const std::string& where,
                     std::optional<double>* out) {
  const json* f = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(Field(j, name, where, &f));
  if (f->is_null()) {
    out->reset();
    return Status::OK();
  }
  if (!f->is_number())
    return Status::Corruption(where + ": '" + name + "' is neither null nor a number");
  *out = f->get<double>();
  return Status::OK();
}

// "lr_bounds_declared": a list of distinct names out of "max_lr", "min_lr".
Status DeclaredBounds(const json& j, const std::string& where, ParamGroupIdentity* id) {
  const json* f = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(Field(j, "lr_bounds_declared", where, &f));
  if (!f->is_array() || f->size() > 2) {
    return Status::Corruption(where + ": 'lr_bounds_declared' is not a list of at most two names");
  }
  for (const json& name : *f) {
    bool* declares = nullptr;
    if (name == "max_lr") declares = &id->declares_max_lr;
    if (name == "min_lr") declares = &id->declares_min_lr;
    if (declares == nullptr || *declares) {
      return Status::Corruption(where + ": 'lr_bounds_declared' holds " + name.dump() +
                                ", not a distinct 'max_lr' or 'min_lr'");
    }
    *declares = true;
  }
  return Status::OK();
}

}  // namespace

void IdentityToJson(const ParamGroupIdentity& id, json* group) {
  json& j = *group;
  auto bound = [](const std::optional<double>& b) { return b ? json(*b) : json(nullptr); };
  if (id.Has(IdentityField::kWdMult)) j["wd_mult"] = id.wd_mult;
  if (id.Has(IdentityField::kLrMult)) j["lr_mult"] = id.lr_mult;
  if (id.Has(IdentityField::kIsExpertParallel)) j["is_expert_parallel"] = id.is_expert_parallel;
  if (id.Has(IdentityField::kIsDecoupledLr)) j["is_decoupled_lr"] = id.is_decoupled_lr;
  if (id.Has(IdentityField::kMaxLr)) j["max_lr"] = bound(id.max_lr);
  if (id.Has(IdentityField::kMinLr)) j["min_lr"] = bound(id.min_lr);
  if (id.Has(IdentityField::kLrBoundsDeclared)) {
    json declared = json::array();
    if (id.declares_max_lr) declared.push_back("max_lr");
    if (id.declares_min_lr) declared.push_back("min_lr");
    j["lr_bounds_declared"] = std::move(declared);
  }
}

json ParamGroupToJson(const ParamGroup& g) {
  json j = json::object();
  IdentityToJson(g.identity, &j);
  j["lr"] = g.lr;
  j["weight_decay"] = g.weight_decay;
  j["betas"] = json::array({g.beta1, g.beta2});
  j["eps"] = g.eps;
  j["step"] = g.step;
  j["params"] = g.params;
  return j;
}

Status ParamGroupFromJson(const json& j, ParamGroup* out) {
  const std::string w = "param group";
  if (!j.is_object()) return Status::Corruption(w + " is not an object");
  ParamGroup g;
  ParamGroupIdentity& id = g.identity;
  auto has = [&](const char* n) { return j.find(n) != j.end(); };
  if (has("wd_mult"))
    CKPTSPEC_RETURN_IF_ERROR(Number(j, "wd_mult", w, &id.wd_mult));
  else
    id.Remove(IdentityField::kWdMult);
  if (has("lr_mult"))
    CKPTSPEC_RETURN_IF_ERROR(Number(j, "lr_mult", w, &id.lr_mult));
  else
    id.Remove(IdentityField::kLrMult);
  if (has("is_expert_parallel"))
    CKPTSPEC_RETURN_IF_ERROR(Bool(j, "is_expert_parallel", w, &id.is_expert_parallel));
  else
    id.Remove(IdentityField::kIsExpertParallel);
  if (has("is_decoupled_lr"))
    CKPTSPEC_RETURN_IF_ERROR(Bool(j, "is_decoupled_lr", w, &id.is_decoupled_lr));
  else
    id.Remove(IdentityField::kIsDecoupledLr);
  if (has("max_lr"))
    CKPTSPEC_RETURN_IF_ERROR(OptionalBound(j, "max_lr", w, &id.max_lr));
  else
    id.Remove(IdentityField::kMaxLr);
  if (has("min_lr"))
    CKPTSPEC_RETURN_IF_ERROR(OptionalBound(j, "min_lr", w, &id.min_lr));
  else
    id.Remove(IdentityField::kMinLr);
  if (has("lr_bounds_declared"))
    CKPTSPEC_RETURN_IF_ERROR(DeclaredBounds(j, w, &id));
  else
    id.Remove(IdentityField::kLrBoundsDeclared);
  CKPTSPEC_RETURN_IF_ERROR(Number(j, "lr", w, &g.lr));
  CKPTSPEC_RETURN_IF_ERROR(Number(j, "weight_decay", w, &g.weight_decay));
  CKPTSPEC_RETURN_IF_ERROR(Number(j, "eps", w, &g.eps));
  CKPTSPEC_RETURN_IF_ERROR(Integer(j, "step", w, &g.step));
  const json* betas = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(Field(j, "betas", w, &betas));
  if (!betas->is_array() || betas->size() != 2 || !(*betas)[0].is_number() ||
      !(*betas)[1].is_number()) {
    return Status::Corruption(w + ": 'betas' is not a pair of numbers");
  }
  g.beta1 = (*betas)[0].get<double>();
  g.beta2 = (*betas)[1].get<double>();
  const json* params = nullptr;
  CKPTSPEC_RETURN_IF_ERROR(Field(j, "params", w, &params));
  if (!params->is_array()) return Status::Corruption(w + ": 'params' is not an array");
  for (const json& p : *params) {
    if (!p.is_number_integer()) return Status::Corruption(w + ": 'params' holds a non-integer");
    constexpr int64_t kMaxIndex = std::numeric_limits<int>::max();
    const bool index = p.is_number_unsigned()
                           ? p.get<uint64_t>() <= static_cast<uint64_t>(kMaxIndex)
                           : p.get<int64_t>() >= 0 && p.get<int64_t>() <= kMaxIndex;
    if (!index)
      return Status::Corruption(w + ": 'params' holds " + p.dump() + ", not a parameter index");
    g.params.push_back(static_cast<int>(p.get<int64_t>()));
  }
  *out = std::move(g);
  return Status::OK();
}

json SubOptimizersToJson(const std::vector<SubOptimizer>& subs) {
  json a = json::array();
  for (const SubOptimizer& s : subs) {
    json groups = json::array();
    for (const ParamGroup& g : s.groups) groups.push_back(ParamGroupToJson(g));
    a.push_back(json{{"name", s.name}, {"param_groups", groups}});
  }
  return a;
}

Status SubOptimizersFromJson(const json& j, std::vector<SubOptimizer>* out) {
  if (!j.is_array()) return Status::Corruption("sub-optimizers are not an array");
  std::vector<SubOptimizer> subs;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string w = "sub-optimizer " + std::to_string(i);
    SubOptimizer s;
    CKPTSPEC_RETURN_IF_ERROR(String(j[i], "name", w, &s.name));
    const json* groups = nullptr;
    CKPTSPEC_RETURN_IF_ERROR(Field(j[i], "param_groups", w, &groups));
    if (!groups->is_array()) return Status::Corruption(w + ": 'param_groups' is not an array");
    for (size_t g = 0; g < groups->size(); ++g) {
      ParamGroup pg;
      CKPTSPEC_RETURN_IF_ERROR(
          ParamGroupFromJson((*groups)[g], &pg).WithContext(w + " group " + std::to_string(g)));
      s.groups.push_back(std::move(pg));
    }
    subs.push_back(std::move(s));
  }
  *out = std::move(subs);
  return Status::OK();
}

Status CheckGroupParameters(const std::vector<SubOptimizer>& subs, size_t num_params) {
  for (const SubOptimizer& s : subs) {
    std::vector<bool> seen(num_params, false);
    for (size_t g = 0; g < s.groups.size(); ++g) {
      for (int p : s.groups[g].params) {
        const std::string where = "sub-optimizer '" + s.name + "' group " + std::to_string(g);
        if (p < 0 || static_cast<size_t>(p) >= num_params) {
          return Status::Corruption(where + ": parameter index " + std::to_string(p) +
                                    " is outside the model's " + std::to_string(num_params) +
                                    " parameters");
        }
        if (seen[p]) {
          return Status::Corruption(where + ": parameter index " + std::to_string(p) +
                                    " belongs to two groups");
        }
        seen[p] = true;
      }
    }
  }
  return Status::OK();
}

json HeterogeneousLayoutToJson(const HeterogeneousLayout& layout) {
  json a = json::array();
  for (const ModuleLayout& m : layout.modules()) {
    const Layout& l = m.layout;
    a.push_back(json{{"name", m.name},
                     {"first_rank", m.first_rank},
                     {"world_size", l.world_size()},
                     {"tp", l.tp()},
                     {"pp", l.pp()},
                     {"dp", l.dp()},
                     {"cp", l.cp()},
                     {"ep", l.ep()},
                     {"etp", l.etp()},
                     {"order", l.order().ToString()}});
  }
  return a;
}

Status HeterogeneousLayoutFromJson(const json& j, HeterogeneousLayout* out) {
  if (!j.is_array()) return Status::Corruption("parallel_layout is not an array");
  std::vector<ModuleLayout> modules;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string w = "parallel_layout module " + std::to_string(i);
    ModuleLayout m;
    int64_t world = 0;
    ParallelSizes p;
    std::string order;
    CKPTSPEC_RETURN_IF_ERROR(String(j[i], "name", w, &m.name));
    CKPTSPEC_RETURN_IF_ERROR(Integer(j[i], "first_rank", w, &m.first_rank));
    CKPTSPEC_RETURN_IF_ERROR(Integer(j[i], "world_size", w, &world));
    CKPTSPEC_RETURN_IF_ERROR(Integer(j[i], "tp", w, &p.tp));
    CKPTSPEC_RETURN_IF_ERROR(Integer(j[i], "pp", w, &p.pp));
    CKPTSPEC_RETURN_IF_ERROR(Integer(j[i], "dp", w, &p.dp));
    CKPTSPEC_RETURN_IF_ERROR(Integer(j[i], "cp", w, &p.cp));
    CKPTSPEC_RETURN_IF_ERROR(Integer(j[i], "ep", w, &p.ep));
    CKPTSPEC_RETURN_IF_ERROR(Integer(j[i], "etp", w, &p.etp));
    CKPTSPEC_RETURN_IF_ERROR(String(j[i], "order", w, &order));
    RankOrder ro;
    Status s = RankOrder::Parse(order, &ro);
    if (s.ok()) s = Layout::Make(world, p, ro, &m.layout);
    if (!s.ok()) return Status::Corruption(w + ": " + s.message());
    modules.push_back(std::move(m));
  }
  Status s = HeterogeneousLayout::Make(std::move(modules), out);
  if (!s.ok()) return Status::Corruption("parallel_layout: " + s.message());
  return Status::OK();
}

}  // namespace ckptspec
