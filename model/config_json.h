// The JSON forms of the configs that several documents share: a module's layout, a model, the
// param-group config and the scheduler config. The regression files (runner/regression_case.h)
// and the framework job (model/framework_job.h, docs/PROTOCOL.md) write and read them here, so a
// field has one spelling everywhere.
//
// Contract: every *FromJson reads the members it knows from an object and never throws; a member
// may be left out (the struct's value stays), a mistyped or invalid one is an InvalidArgument
// naming its JSON path (model/json_fields.h). ModelConfigFromJson and SchedulerConfigFromJson
// refuse members they do not know; LayoutMembersFromJson and GroupingMembersFromJson read only
// their members of a larger object, whose reader lists the members it allows (ExpectOnlyMembers).
// Each *ToJson writes every member, so that *FromJson of the result gives the same value.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/layout.h"
#include "model/model_config.h"
#include "model/param_groups.h"
#include "model/scheduler.h"
#include "model/status.h"

namespace ckptspec {

// The members "world_size", "tp", "pp", "dp" (0 or absent: derived), "cp", "ep", "etp", "order"
// ("tp-cp-ep-dp-pp" when absent) of `f`, made into a Layout (its errors at f's path).
inline constexpr const char* kLayoutMembers[] = {"world_size", "tp", "pp",  "dp",
                                                 "cp",         "ep", "etp", "order"};
Status LayoutMembersFromJson(const JsonField& f, Layout* out);
// Adds those members to *object.
void LayoutMembersToJson(const Layout& layout, nlohmann::json* object);

// {"name", "num_layers", "hidden_size", "num_attention_heads", "num_query_groups",
//  "ffn_hidden_size", "vocab_size", "gated_linear_unit", "add_bias", "tie_embeddings",
//  "num_experts", "moe_ffn_hidden_size", "moe_layer_freq", "params_dtype",
//  "pipeline_split": {"first_stage_layers", "last_stage_layers"}}. Not validated here.
Status ModelConfigFromJson(const JsonField& f, ModelConfig* out);
nlohmann::json ModelConfigToJson(const ModelConfig& model);

// The members "weight_decay", "beta1", "beta2", "eps", "decoupled_lr", "decoupled_min_lr"
// (numbers or null), "lr_mult_overrides" ([{"name_contains", "lr_mult"}]) and
// "lr_bound_overrides" ([{"name_contains", "max_lr", "min_lr" (a number or null)}]) of `f`.
inline constexpr const char* kGroupingMembers[] = {"weight_decay",
                                                   "beta1",
                                                   "beta2",
                                                   "eps",
                                                   "decoupled_lr",
                                                   "decoupled_min_lr",
                                                   "lr_mult_overrides",
                                                   "lr_bound_overrides"};
Status GroupingMembersFromJson(const JsonField& f, GroupingConfig* out);
void GroupingMembersToJson(const GroupingConfig& grouping, nlohmann::json* object);

// {"init_lr", "max_lr", "min_lr", "lr_warmup_steps", "lr_decay_steps", "lr_decay_style",
//  "wsd_decay_steps", "lr_wsd_decay_style", "start_wd", "end_wd", "wd_incr_steps",
//  "wd_incr_style"}, styles spelled as scheduler.h names them. Not validated here.
Status SchedulerConfigFromJson(const JsonField& f, SchedulerConfig* out);
nlohmann::json SchedulerConfigToJson(const SchedulerConfig& config);

}  // namespace ckptspec
