#include "model/state_common.h"

#include <limits>
#include <utility>

#include "model/config_json.h"
#include "model/json_fields.h"

namespace ckptspec {

namespace {

using nlohmann::json;

// "lr_bounds_declared": a list of distinct names out of "max_lr", "min_lr".
Status ReadDeclaredBounds(const JsonField& f, ParamGroupIdentity* id) {
  std::vector<std::string> names;
  CKPTSPEC_RETURN_IF_ERROR(f.GetStringArray(&names));
  for (size_t i = 0; i < names.size(); ++i) {
    bool* declares = nullptr;
    if (names[i] == "max_lr") declares = &id->declares_max_lr;
    if (names[i] == "min_lr") declares = &id->declares_min_lr;
    if (declares == nullptr || *declares) {
      return f.Element(i).Expected("a distinct \"max_lr\" or \"min_lr\"");
    }
    *declares = true;
  }
  return Status::OK();
}

// The identity member `field` of a group: read with read(member) when present, else removed.
template <typename Read>
Status ReadIdentityField(const JsonField& group, IdentityField field, ParamGroupIdentity* id,
                         Read read) {
  const JsonField member = group.OptionalMember(IdentityFieldName(field));
  if (!member.present()) {
    id->Remove(field);
    return Status::OK();
  }
  return read(member);
}

// A group as ParamGroupToJson writes it; InvalidArgument naming the field.
Status ReadParamGroup(const JsonField& f, ParamGroup* out) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectObject());
  ParamGroup g;
  ParamGroupIdentity& id = g.identity;
  CKPTSPEC_RETURN_IF_ERROR(
      ReadIdentityField(f, IdentityField::kWdMult, &id,
                        [&](const JsonField& m) { return m.GetDouble(&id.wd_mult); }));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadIdentityField(f, IdentityField::kLrMult, &id,
                        [&](const JsonField& m) { return m.GetDouble(&id.lr_mult); }));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadIdentityField(f, IdentityField::kIsExpertParallel, &id,
                        [&](const JsonField& m) { return m.GetBool(&id.is_expert_parallel); }));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadIdentityField(f, IdentityField::kIsDecoupledLr, &id,
                        [&](const JsonField& m) { return m.GetBool(&id.is_decoupled_lr); }));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadIdentityField(f, IdentityField::kMaxLr, &id,
                        [&](const JsonField& m) { return m.GetDoubleOrNull(&id.max_lr); }));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadIdentityField(f, IdentityField::kMinLr, &id,
                        [&](const JsonField& m) { return m.GetDoubleOrNull(&id.min_lr); }));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadIdentityField(f, IdentityField::kLrBoundsDeclared, &id,
                        [&](const JsonField& m) { return ReadDeclaredBounds(m, &id); }));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("lr").GetDouble(&g.lr));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("weight_decay").GetDouble(&g.weight_decay));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("eps").GetDouble(&g.eps));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("step").GetInt64(&g.step));
  const JsonField betas = f.Member("betas");
  CKPTSPEC_RETURN_IF_ERROR(betas.ExpectArrayOfSize(2));
  CKPTSPEC_RETURN_IF_ERROR(betas.Element(0).GetDouble(&g.beta1));
  CKPTSPEC_RETURN_IF_ERROR(betas.Element(1).GetDouble(&g.beta2));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("params").ForEachElement([&g](const JsonField& p) {
    int64_t index = 0;
    CKPTSPEC_RETURN_IF_ERROR(p.GetInt64(0, std::numeric_limits<int>::max(), &index));
    g.params.push_back(static_cast<int>(index));
    return Status::OK();
  }));
  *out = std::move(g);
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
  return AsCorruption(ReadParamGroup(JsonField(j, "param_group"), out));
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
  std::vector<SubOptimizer> subs;
  const Status read = JsonField(j, "optimizer").ForEachElement([&subs](const JsonField& f) {
    SubOptimizer s;
    CKPTSPEC_RETURN_IF_ERROR(f.Member("name").GetString(&s.name));
    CKPTSPEC_RETURN_IF_ERROR(f.Member("param_groups").ForEachElement([&s](const JsonField& g) {
      ParamGroup pg;
      CKPTSPEC_RETURN_IF_ERROR(ReadParamGroup(g, &pg));
      s.groups.push_back(std::move(pg));
      return Status::OK();
    }));
    subs.push_back(std::move(s));
    return Status::OK();
  });
  CKPTSPEC_RETURN_IF_ERROR(AsCorruption(read));
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
    json module{{"name", m.name}, {"first_rank", m.first_rank}};
    LayoutMembersToJson(m.layout, &module);
    a.push_back(std::move(module));
  }
  return a;
}

namespace {

// What HeterogeneousLayoutToJson wrote: every layout member is there (none is derived).
Status ReadHeterogeneousLayout(const JsonField& f, HeterogeneousLayout* out) {
  std::vector<ModuleLayout> modules;
  CKPTSPEC_RETURN_IF_ERROR(f.ForEachElement([&modules](const JsonField& module) {
    ModuleLayout m;
    CKPTSPEC_RETURN_IF_ERROR(module.Member("name").GetString(&m.name));
    CKPTSPEC_RETURN_IF_ERROR(module.Member("first_rank").GetInt64(&m.first_rank));
    for (const char* name : kLayoutMembers) {
      CKPTSPEC_RETURN_IF_ERROR(module.Member(name).ExpectPresent());
    }
    CKPTSPEC_RETURN_IF_ERROR(LayoutMembersFromJson(module, &m.layout));
    modules.push_back(std::move(m));
    return Status::OK();
  }));
  const Status made = HeterogeneousLayout::Make(std::move(modules), out);
  if (!made.ok()) return f.Error(made.message());
  return Status::OK();
}

}  // namespace

Status HeterogeneousLayoutFromJson(const JsonField& f, HeterogeneousLayout* out) {
  return AsCorruption(ReadHeterogeneousLayout(f, out));
}

}  // namespace ckptspec
