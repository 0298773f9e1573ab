#include "model/param_groups.h"
#include "model/number_text.h"

#include <cmath>
#include <map>
#include <sstream>

namespace ckptspec {

const char* IdentityFieldName(IdentityField field) {
  switch (field) {
    case IdentityField::kWdMult:
      return "wd_mult";
    case IdentityField::kLrMult:
      return "lr_mult";
    case IdentityField::kIsExpertParallel:
      return "is_expert_parallel";
    case IdentityField::kIsDecoupledLr:
      return "is_decoupled_lr";
    case IdentityField::kMaxLr:
      return "max_lr";
    case IdentityField::kMinLr:
      return "min_lr";
    case IdentityField::kLrBoundsDeclared:
      return "lr_bounds_declared";
  }
  return "?";
}

namespace {

std::string Opt(const std::optional<double>& v) {
  return v ? ExactDecimal(*v) : std::string("None");
}

int NumFields(IdentityKeySet set) { return set == IdentityKeySet::kCore ? 4 : kNumIdentityFields; }

}  // namespace

std::string DescribeKey(const ParamGroupKey& k) {
  std::string s = "(wd_mult=" + ExactDecimal(k.wd_mult) + ", lr_mult=" + ExactDecimal(k.lr_mult) +
                  ", is_expert_parallel=" + (k.is_expert_parallel ? "True" : "False") +
                  ", is_decoupled_lr=" + (k.is_decoupled_lr ? "True" : "False");
  if (k.set == IdentityKeySet::kWithLrBounds) {
    s += ", max_lr=" + Opt(k.max_lr) + ", min_lr=" + Opt(k.min_lr);
  }
  return s + ")";
}

Status IdentityKey(const ParamGroupIdentity& id, IdentityKeySet set, const std::string& what,
                   ParamGroupKey* out) {
  for (int f = 0; f < NumFields(set); ++f) {
    if (!id.Has(static_cast<IdentityField>(f))) {
      return Status::NotFound(what + " lacks identifier key '" +
                              IdentityFieldName(static_cast<IdentityField>(f)) + "'");
    }
  }
  auto finite = [&](const char* name, double v) -> Status {
    if (std::isfinite(v)) return Status::OK();
    return Status::InvalidArgument(what + ": identifier " + name + " = " + ExactDecimal(v) +
                                   " is not finite");
  };
  CKPTSPEC_RETURN_IF_ERROR(finite("wd_mult", id.wd_mult));
  CKPTSPEC_RETURN_IF_ERROR(finite("lr_mult", id.lr_mult));
  ParamGroupKey k;
  k.set = set;
  k.wd_mult = id.wd_mult;
  k.lr_mult = id.lr_mult;
  k.is_expert_parallel = id.is_expert_parallel;
  k.is_decoupled_lr = id.is_decoupled_lr;
  if (set == IdentityKeySet::kWithLrBounds) {
    // Only declared bounds are identity; an undeclared one is the scheduler's (None in the key).
    auto declared = [&](const char* name, bool declares, const std::optional<double>& v,
                        std::optional<double>* key) -> Status {
      if (!declares) return Status::OK();
      if (!v) {
        return Status::InvalidArgument(what + " declares " + name + " but its " + name +
                                       " is None");
      }
      CKPTSPEC_RETURN_IF_ERROR(finite(name, *v));
      *key = v;
      return Status::OK();
    };
    CKPTSPEC_RETURN_IF_ERROR(declared("max_lr", id.declares_max_lr, id.max_lr, &k.max_lr));
    CKPTSPEC_RETURN_IF_ERROR(declared("min_lr", id.declares_min_lr, id.min_lr, &k.min_lr));
  }
  *out = k;
  return Status::OK();
}

std::vector<ParamGroup> DefaultParamGroups(const std::vector<ParameterSpec>& params,
                                           const std::vector<bool>& frozen,
                                           const GroupingConfig& config, double sched_max_lr,
                                           double sched_min_lr) {
  std::vector<ParamGroup> groups;
  std::map<ParamGroupKey, size_t> index;
  for (size_t i = 0; i < params.size(); ++i) {
    if (i < frozen.size() && frozen[i]) continue;
    const ParameterSpec& p = params[i];
    ParamGroupIdentity id;
    id.wd_mult = p.no_weight_decay ? 0.0 : 1.0;
    id.lr_mult = 1.0;
    for (const LrMultOverride& o : config.lr_mult_overrides) {
      if (p.name.find(o.name_contains) != std::string::npos) {
        id.lr_mult = o.lr_mult;
        break;
      }
    }
    id.is_expert_parallel = p.is_expert();
    id.is_decoupled_lr =
        config.decoupled_lr.has_value() && (p.placement == ParamPlacement::kEmbedding ||
                                            p.name.find("output_layer.") != std::string::npos);
    id.max_lr = sched_max_lr;
    id.min_lr = sched_min_lr;
    if (id.is_decoupled_lr) {
      id.max_lr = *config.decoupled_lr;
      id.declares_max_lr = true;
      if (config.decoupled_min_lr) {
        id.min_lr = *config.decoupled_min_lr;
        id.declares_min_lr = true;
      }
    } else {
      for (const LrBoundOverride& o : config.lr_bound_overrides) {
        if (p.name.find(o.name_contains) == std::string::npos) continue;
        id.max_lr = o.max_lr;
        id.declares_max_lr = true;
        if (o.min_lr) {
          id.min_lr = *o.min_lr;
          id.declares_min_lr = true;
        }
        break;
      }
    }
    ParamGroupKey key;
    // Cannot fail for a valid config (ValidateTrainingConfig): every field is present, every
    // declared bound finite.
    IdentityKey(id, IdentityKeySet::kWithLrBounds, "default group", &key).IgnoreError();
    auto it = index.find(key);
    if (it == index.end()) {
      ParamGroup g;
      g.identity = id;
      g.weight_decay = config.weight_decay * id.wd_mult;
      g.beta1 = config.beta1;
      g.beta2 = config.beta2;
      g.eps = config.eps;
      it = index.emplace(key, groups.size()).first;
      groups.push_back(std::move(g));
    }
    groups[it->second].params.push_back(static_cast<int>(i));
  }
  return groups;
}

Status KeySetOfSavedGroups(const std::vector<ParamGroupIdentity>& saved, IdentityKeySet* out) {
  *out = IdentityKeySet::kCore;
  for (size_t i = 0; i < saved.size(); ++i) {
    const bool newer = saved[i].Has(IdentityField::kLrBoundsDeclared);
    if (i == 0) {
      if (newer) *out = IdentityKeySet::kWithLrBounds;
      continue;
    }
    if (newer != (*out == IdentityKeySet::kWithLrBounds)) {
      return Status::InvalidArgument(
          "saved param group " + std::to_string(newer ? 0 : i) + " lacks identifier key '" +
          IdentityFieldName(IdentityField::kLrBoundsDeclared) + "' but saved param group " +
          std::to_string(newer ? i : 0) + " has it: groups of two identity-key forms");
    }
  }
  return Status::OK();
}

bool SomeGroupsDifferOnlyInLrBounds(const std::vector<ParamGroupIdentity>& ids) {
  std::map<ParamGroupKey, ParamGroupKey> newer_by_core;
  for (size_t i = 0; i < ids.size(); ++i) {
    ParamGroupKey core, newer;
    const std::string what = "param group " + std::to_string(i);
    if (!IdentityKey(ids[i], IdentityKeySet::kCore, what, &core).ok() ||
        !IdentityKey(ids[i], IdentityKeySet::kWithLrBounds, what, &newer).ok()) {
      continue;
    }
    auto [it, inserted] = newer_by_core.emplace(core, newer);
    if (!inserted && it->second != newer) return true;
  }
  return false;
}

std::vector<ParamGroupIdentity> Identities(const std::vector<ParamGroup>& groups) {
  std::vector<ParamGroupIdentity> out;
  out.reserve(groups.size());
  for (const ParamGroup& g : groups) out.push_back(g.identity);
  return out;
}

namespace {

Status KeysOf(const std::vector<ParamGroupIdentity>& ids, IdentityKeySet set, const char* side,
              std::map<ParamGroupKey, int>* out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string what = std::string(side) + " param group " + std::to_string(i);
    ParamGroupKey k;
    CKPTSPEC_RETURN_IF_ERROR(IdentityKey(ids[i], set, what, &k));
    auto [it, inserted] = out->emplace(k, static_cast<int>(i));
    if (!inserted) {
      return Status::InvalidArgument(std::string(side) + " param groups " +
                                     std::to_string(it->second) + " and " + std::to_string(i) +
                                     " share the identity " + DescribeKey(k) +
                                     "; groups must be distinct to be matched");
    }
  }
  return Status::OK();
}

}  // namespace

Status MatchSavedParamGroups(const std::vector<ParamGroup>& saved,
                             const std::vector<ParamGroup>& current,
                             const std::vector<bool>& frozen_now, bool keep_frozen_groups,
                             std::vector<int>* saved_for_current, IdentityKeySet* key_set) {
  std::vector<int> kept;  // indexes into `saved`
  std::vector<ParamGroupIdentity> kept_ids;
  for (size_t g = 0; g < saved.size(); ++g) {
    bool any_trainable = keep_frozen_groups;
    for (int p : saved[g].params) {
      any_trainable |= p < 0 || static_cast<size_t>(p) >= frozen_now.size() || !frozen_now[p];
    }
    if (!any_trainable) continue;
    kept.push_back(static_cast<int>(g));
    kept_ids.push_back(saved[g].identity);
  }
  CKPTSPEC_RETURN_IF_ERROR(KeySetOfSavedGroups(kept_ids, key_set));
  std::vector<int> match;
  CKPTSPEC_RETURN_IF_ERROR(MatchParamGroups(kept_ids, Identities(current), *key_set, &match));
  for (int& m : match) m = kept[m];
  *saved_for_current = std::move(match);
  return Status::OK();
}

Status MatchParamGroups(const std::vector<ParamGroupIdentity>& saved,
                        const std::vector<ParamGroupIdentity>& current, IdentityKeySet set,
                        std::vector<int>* saved_for_current) {
  std::map<ParamGroupKey, int> saved_keys, current_keys;
  CKPTSPEC_RETURN_IF_ERROR(KeysOf(saved, set, "saved", &saved_keys));
  CKPTSPEC_RETURN_IF_ERROR(KeysOf(current, set, "current", &current_keys));
  std::vector<int> match(current.size(), -1);
  for (const auto& [key, c] : current_keys) {
    auto it = saved_keys.find(key);
    if (it == saved_keys.end()) {
      return Status::NotFound("current param group " + std::to_string(c) + " with identity " +
                              DescribeKey(key) + " has no saved param group");
    }
    match[c] = it->second;
  }
  for (const auto& [key, s] : saved_keys) {
    if (current_keys.count(key) == 0) {
      return Status::NotFound("saved param group " + std::to_string(s) + " with identity " +
                              DescribeKey(key) + " matches no current param group");
    }
  }
  *saved_for_current = std::move(match);
  return Status::OK();
}

}  // namespace ckptspec
