// JSON forms of the run-level state the canonical sharding keeps in common state or in per-module
// objects (state_sharding.h): param groups, sub-optimizers, layouts, the sharding config. Readers
// never throw: a missing or mistyped field is Corruption naming its JSON path from the name the
// value is stored under (model/json_fields.h): "optimizer[0].param_groups[1].lr: expected a
// number, got null", "parallel_layout[0]: missing required member \"tp\"".
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/layout.h"
#include "model/status.h"
#include "model/training_state.h"

namespace ckptspec {

// {"wd_mult", "lr_mult", "is_expert_parallel", "is_decoupled_lr", "max_lr", "min_lr" (null for
// None), "lr_bounds_declared": the declared bounds' names (a subset of ["max_lr", "min_lr"]), "lr",
// "weight_decay", "betas": [b1, b2], "eps", "step", "params": [indices]}; identity fields that are
// absent from the group (ParamGroupIdentity::absent) are left out, as Python would (a group of the
// older form lacks "lr_bounds_declared").
nlohmann::json ParamGroupToJson(const ParamGroup& g);
// The identity members of that form alone, added to *group (what a framework observes of a
// group's dict too: model/observation.h).
void IdentityToJson(const ParamGroupIdentity& id, nlohmann::json* group);
Status ParamGroupFromJson(const nlohmann::json& j, ParamGroup* out);

// [{"name", "param_groups": [...]}, ...].
nlohmann::json SubOptimizersToJson(const std::vector<SubOptimizer>& subs);
Status SubOptimizersFromJson(const nlohmann::json& j, std::vector<SubOptimizer>* out);
// What SubOptimizersFromJson cannot know: every group's parameter indices lie in [0, num_params)
// and no parameter is in two groups of one sub-optimizer. Corruption naming the group otherwise
// (a checkpoint's groups index the saving model's parameters; load rules index with them).
Status CheckGroupParameters(const std::vector<SubOptimizer>& subs, size_t num_params);

// [{"name", "first_rank", and the layout's members (LayoutMembersToJson: "world_size", "tp", "pp",
// "dp", "cp", "ep", "etp", "order")}, ...]; the reader needs every member.
nlohmann::json HeterogeneousLayoutToJson(const HeterogeneousLayout& layout);
// Reads it where it is stored: `f` ("common.parallel_layout").
Status HeterogeneousLayoutFromJson(const JsonField& f, HeterogeneousLayout* out);

}  // namespace ckptspec
