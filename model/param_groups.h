// Optimizer param groups: identity, hyper-parameters, Megatron's default grouping, and matching
// saved groups to current groups by identity (docs/SEMANTICS.md §5, docs/BUGS.md B01).
//
// A param group has IDENTITY fields, which say which parameters it holds and how the scheduler
// treats them (wd_mult, lr_mult, is_expert_parallel, is_decoupled_lr; from megatron-core v0.19 also
// max_lr and min_lr), and HYPER-PARAMETERS the optimizer reads (lr, weight_decay, betas, eps),
// which the scheduler rewrites every step.
//
// LR bounds: every group carries the max_lr / min_lr the scheduler uses for it. A bound is
// DECLARED when the config sets it for the group's parameters (a per-region bound, as µP-style
// setups make, or the decoupled LR); otherwise it is the scheduler's and follows the scheduler
// (it changes under --override-opt_param-scheduler). Which bounds are declared is recorded with
// the group ("lr_bounds_declared"); a group written before that field existed lacks it (the
// older form of the identity key).
//
// Contracts (the correct behaviour; Megatron deviates where noted):
//  - A field may be ABSENT from a group (its key is missing from the Python dict). An absent
//    identity field is a named error whenever an identity key is needed, on save and on load
//    alike (B01: ms-swift popped lr_mult; v0.14-v0.18 raise only on load; v0.19 silently uses
//    None). max_lr / min_lr are optional-valued: None means "the scheduler's".
//  - Matching saved groups to current groups is by identity, independent of order, and must be
//    a bijection: two groups with the same identity on either side, a current group without a
//    saved one, or a saved group without a current one are named errors (Megatron's
//    make_needed_groups collapses saved duplicates silently and ignores unmatched saved groups).
//  - Which fields make up the key is a parameter (IdentityKeySet), the key's version: kCore is the
//    v0.13-v0.18 tuple; kWithLrBounds adds the DECLARED bounds (an undeclared bound is None in
//    the key, so a scheduler change never changes a key, while two groups that differ only in
//    their declared bounds are two identities; megatron-core v0.19 adds the bounds as the group
//    carries them, Megatron-LM PR #4705). The load rules (load_semantics.h) match with the key
//    version the checkpoint's groups were written in (KeySetOfSavedGroups).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "model/model_config.h"
#include "model/status.h"

namespace ckptspec {

enum class IdentityField : int {
  kWdMult = 0,
  kLrMult,
  kIsExpertParallel,
  kIsDecoupledLr,
  kMaxLr,
  kMinLr,
  kLrBoundsDeclared,
};
inline constexpr int kNumIdentityFields = 7;

// The Python key: "wd_mult", "lr_mult", "is_expert_parallel", "is_decoupled_lr", "max_lr", "min_lr",
// "lr_bounds_declared".
const char* IdentityFieldName(IdentityField field);

enum class IdentityKeySet {
  kCore,  // (wd_mult, lr_mult, is_expert_parallel, is_decoupled_lr): megatron-core v0.13-v0.18
  kWithLrBounds,  // kCore + (declared max_lr, declared min_lr): groups with lr_bounds_declared
};

struct ParamGroupIdentity {
  double wd_mult = 1.0;
  double lr_mult = 1.0;
  bool is_expert_parallel = false;
  bool is_decoupled_lr = false;
  std::optional<double> max_lr;  // nullopt: None (the scheduler's max_lr)
  std::optional<double> min_lr;
  // The config declares this group's max_lr / min_lr (see "LR bounds" above); a declared bound
  // is never None.
  bool declares_max_lr = false;
  bool declares_min_lr = false;
  // Bit (1 << IdentityField) set: that key is missing from the group dict.
  uint32_t absent = 0;

  bool Has(IdentityField f) const { return (absent & (1u << static_cast<int>(f))) == 0; }
  void Remove(IdentityField f) { absent |= 1u << static_cast<int>(f); }
};

// The identity key: the fields of a key set, all present. Fields outside the set compare equal;
// under kWithLrBounds an undeclared bound is None.
struct ParamGroupKey {
  IdentityKeySet set = IdentityKeySet::kCore;
  double wd_mult = 1.0;
  double lr_mult = 1.0;
  bool is_expert_parallel = false;
  bool is_decoupled_lr = false;
  std::optional<double> max_lr;
  std::optional<double> min_lr;

  auto Tie() const {
    return std::tie(set, wd_mult, lr_mult, is_expert_parallel, is_decoupled_lr, max_lr, min_lr);
  }
  bool operator==(const ParamGroupKey& o) const { return Tie() == o.Tie(); }
  bool operator!=(const ParamGroupKey& o) const { return !(*this == o); }
  bool operator<(const ParamGroupKey& o) const { return Tie() < o.Tie(); }
};

// "(wd_mult=1, lr_mult=1, is_expert_parallel=False, is_decoupled_lr=False[, max_lr=None, min_lr=None])".
std::string DescribeKey(const ParamGroupKey& key);

// The identity's key under `set`. Errors: an identity field of the set is absent (NotFound,
// naming the field); a multiplier or declared bound is not finite, or a declared bound is None
// (InvalidArgument). `what` names the group in messages ("saved param group 2").
Status IdentityKey(const ParamGroupIdentity& id, IdentityKeySet set, const std::string& what,
                   ParamGroupKey* out);

struct ParamGroup {
  ParamGroupIdentity identity;
  // Hyper-parameters. lr and weight_decay are the values the next optimizer step uses (the
  // scheduler sets them: lr = scheduler lr x lr_mult, weight_decay = scheduler wd x wd_mult).
  double lr = 0.0;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  int64_t step = 0;  // the group's step counter (used when the optimizer keeps per-group steps)
  std::vector<int> params;  // indices into the ModelParameters() list, increasing
};

struct LrMultOverride {
  std::string name_contains;  // a parameter whose name contains this gets lr_mult
  double lr_mult = 1.0;
};

// A per-region LR bound (Megatron's ParamGroupOverride max_lr / min_lr): a parameter whose name
// contains name_contains gets these declared bounds. min_lr unset: the scheduler's (undeclared).
struct LrBoundOverride {
  std::string name_contains;
  double max_lr = 0.0;
  std::optional<double> min_lr;
};

// Inputs of Megatron's _get_param_groups.
struct GroupingConfig {
  double weight_decay = 0.01;  // the base weight decay (the scheduler's start_wd drives it later)
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  std::vector<LrMultOverride> lr_mult_overrides;  // first match wins (scale_lr_cond)
  // First match wins; a parameter of a decoupled group keeps the decoupled bounds.
  std::vector<LrBoundOverride> lr_bound_overrides;
  // With a decoupled LR, embedding and output parameters form is_decoupled_lr groups whose bounds
  // are these (min defaults to the scheduler's min_lr).
  std::optional<double> decoupled_lr;
  std::optional<double> decoupled_min_lr;
};

// Megatron's default grouping of the trainable parameters (frozen[i] true: parameter i is left
// out). Key per parameter: wd_mult = 0 for no_weight_decay parameters else 1; lr_mult from the
// first matching override else 1; is_expert_parallel = is_expert(); is_decoupled_lr = a decoupled
// LR is set and the parameter is the embedding or the output layer. Groups appear in order of
// their first parameter. Every group carries max_lr / min_lr: the decoupled bounds for decoupled
// groups (max declared; min declared when decoupled_min_lr is set), else the first matching
// lr_bound_override's (declared), else (sched_max_lr, sched_min_lr) (undeclared). Groups are keyed
// by kWithLrBounds, so parameters whose declared bounds differ are in different groups even when
// the rest of their identity is equal. Hyper-parameters from `config`; lr = 0 until the scheduler
// sets it. Precondition: frozen.size() == params.size().
std::vector<ParamGroup> DefaultParamGroups(const std::vector<ParameterSpec>& params,
                                           const std::vector<bool>& frozen,
                                           const GroupingConfig& config, double sched_max_lr,
                                           double sched_min_lr);

// Matches saved groups to current groups by identity key under `set`. On success
// (*saved_for_current)[c] is the index of the saved group with current group c's identity.
// Errors (all name the groups and the identity): an identity field absent on either side
// (NotFound); two saved or two current groups with the same identity (InvalidArgument); a current
// group with no saved group, or a saved group with no current group (NotFound).
Status MatchParamGroups(const std::vector<ParamGroupIdentity>& saved,
                        const std::vector<ParamGroupIdentity>& current, IdentityKeySet set,
                        std::vector<int>* saved_for_current);

// L3's match of one sub-optimizer's saved groups to its current ones (model/load_semantics.h):
// the saved groups whose parameters are all frozen now (frozen_now[p], by ModelParameters index)
// are dropped first, unless `keep_frozen_groups` (the torch_optim freezing family, whose groups
// hold frozen parameters too); the rest match by identity under the key set they were saved with.
// On success (*saved_for_current)[c] is the index in `saved` of current group c's saved group.
// *key_set is that key set whenever KeySetOfSavedGroups succeeded (for the caller's error
// context). Errors: KeySetOfSavedGroups's, MatchParamGroups's (whose indexes count the saved
// groups left after the drop).
Status MatchSavedParamGroups(const std::vector<ParamGroup>& saved,
                             const std::vector<ParamGroup>& current,
                             const std::vector<bool>& frozen_now, bool keep_frozen_groups,
                             std::vector<int>* saved_for_current, IdentityKeySet* key_set);

// The key version a checkpoint's groups were written in: kWithLrBounds when they have
// lr_bounds_declared, kCore when they lack it (the older form; also for no groups). Error
// (InvalidArgument, naming a group of each form): some have it and some lack it.
Status KeySetOfSavedGroups(const std::vector<ParamGroupIdentity>& saved, IdentityKeySet* out);

// Whether two of the groups share the older key (kCore) but not the newer one: groups that differ
// only in their declared LR bounds, which the older key collapses. Groups whose identity does not
// key (an absent or non-finite field) are skipped.
bool SomeGroupsDifferOnlyInLrBounds(const std::vector<ParamGroupIdentity>& ids);

// Convenience: the identities of groups, in order.
std::vector<ParamGroupIdentity> Identities(const std::vector<ParamGroup>& groups);

}  // namespace ckptspec
