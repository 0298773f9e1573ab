#include "model/config_identity.h"

#include "model/field_count.h"
#include "model/same_bits.h"

namespace ckptspec {

namespace {

template <class T, class Same>
bool AllIdentical(const std::vector<T>& a, const std::vector<T>& b, Same same) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

// Members of the types below.
static bool Identical(const PipelineSplit& a, const PipelineSplit& b) {
  static_assert(FieldCount<PipelineSplit>() == 2, "compare the new member of PipelineSplit");
  return a.first_stage_layers == b.first_stage_layers && a.last_stage_layers == b.last_stage_layers;
}

static bool Identical(const ModuleLayout& a, const ModuleLayout& b) {
  static_assert(FieldCount<ModuleLayout>() == 3, "compare the new member of ModuleLayout");
  return a.name == b.name && a.first_rank == b.first_rank && Identical(a.layout, b.layout);
}

static bool Identical(const LrMultOverride& a, const LrMultOverride& b) {
  static_assert(FieldCount<LrMultOverride>() == 2, "compare the new member of LrMultOverride");
  return a.name_contains == b.name_contains && SameBits(a.lr_mult, b.lr_mult);
}

static bool Identical(const LrBoundOverride& a, const LrBoundOverride& b) {
  static_assert(FieldCount<LrBoundOverride>() == 3, "compare the new member of LrBoundOverride");
  return a.name_contains == b.name_contains && SameBits(a.max_lr, b.max_lr) &&
         SameBits(a.min_lr, b.min_lr);
}

static bool Identical(const BufferConfig& a, const BufferConfig& b) {
  static_assert(FieldCount<BufferConfig>() == 2, "compare the new member of BufferConfig");
  return a.bucket_size == b.bucket_size && a.param_alignment == b.param_alignment;
}

// Layout::Make derives every other member (the per-decomposition sizes' remaining entries and the
// strides) from the world size, the parallel sizes and the rank order, which the accessors give.
bool Identical(const Layout& a, const Layout& b) {
  return a.world_size() == b.world_size() && a.tp() == b.tp() && a.cp() == b.cp() &&
         a.dp() == b.dp() && a.pp() == b.pp() && a.ep() == b.ep() && a.etp() == b.etp() &&
         a.edp() == b.edp() && a.order() == b.order();
}

bool Identical(const HeterogeneousLayout& a, const HeterogeneousLayout& b) {
  // The world size is the modules' rank ranges' (HeterogeneousLayout::Make).
  return a.world_size() == b.world_size() &&
         AllIdentical(a.modules(), b.modules(),
                      [](const ModuleLayout& x, const ModuleLayout& y) { return Identical(x, y); });
}

bool Identical(const ModelConfig& a, const ModelConfig& b) {
  static_assert(FieldCount<ModelConfig>() == 15, "compare the new member of ModelConfig");
  return a.name == b.name && a.num_layers == b.num_layers && a.hidden_size == b.hidden_size &&
         a.num_attention_heads == b.num_attention_heads &&
         a.num_query_groups == b.num_query_groups && a.ffn_hidden_size == b.ffn_hidden_size &&
         a.vocab_size == b.vocab_size && a.gated_linear_unit == b.gated_linear_unit &&
         a.add_bias == b.add_bias && a.tie_embeddings == b.tie_embeddings &&
         a.num_experts == b.num_experts && a.moe_ffn_hidden_size == b.moe_ffn_hidden_size &&
         a.moe_layer_freq == b.moe_layer_freq && a.params_dtype == b.params_dtype &&
         Identical(a.pipeline_split, b.pipeline_split);
}

bool Identical(const GroupingConfig& a, const GroupingConfig& b) {
  static_assert(FieldCount<GroupingConfig>() == 8, "compare the new member of GroupingConfig");
  return SameBits(a.weight_decay, b.weight_decay) && SameBits(a.beta1, b.beta1) &&
         SameBits(a.beta2, b.beta2) && SameBits(a.eps, b.eps) &&
         AllIdentical(
             a.lr_mult_overrides, b.lr_mult_overrides,
             [](const LrMultOverride& x, const LrMultOverride& y) { return Identical(x, y); }) &&
         AllIdentical(
             a.lr_bound_overrides, b.lr_bound_overrides,
             [](const LrBoundOverride& x, const LrBoundOverride& y) { return Identical(x, y); }) &&
         SameBits(a.decoupled_lr, b.decoupled_lr) &&
         SameBits(a.decoupled_min_lr, b.decoupled_min_lr);
}

bool Identical(const OptimizerConfig& a, const OptimizerConfig& b) {
  static_assert(FieldCount<OptimizerConfig>() == 6, "compare the new member of OptimizerConfig");
  return Identical(a.grouping, b.grouping) && a.freeze_family == b.freeze_family &&
         a.step_counter == b.step_counter && a.chaining == b.chaining &&
         SameBits(a.cpu_offload_fraction, b.cpu_offload_fraction) &&
         a.moment_dtype == b.moment_dtype;
}

bool Identical(const SchedulerConfig& a, const SchedulerConfig& b) {
  static_assert(FieldCount<SchedulerConfig>() == 12, "compare the new member of SchedulerConfig");
  return SameBits(a.init_lr, b.init_lr) && SameBits(a.max_lr, b.max_lr) &&
         SameBits(a.min_lr, b.min_lr) && a.lr_warmup_steps == b.lr_warmup_steps &&
         a.lr_decay_steps == b.lr_decay_steps && a.lr_decay_style == b.lr_decay_style &&
         a.wsd_decay_steps == b.wsd_decay_steps && a.lr_wsd_decay_style == b.lr_wsd_decay_style &&
         SameBits(a.start_wd, b.start_wd) && SameBits(a.end_wd, b.end_wd) &&
         a.wd_incr_steps == b.wd_incr_steps && a.wd_incr_style == b.wd_incr_style;
}

bool Identical(const DataConfig& a, const DataConfig& b) {
  static_assert(FieldCount<DataConfig>() == 7, "compare the new member of DataConfig");
  return a.sampler == b.sampler && a.num_samples == b.num_samples && a.seed == b.seed &&
         a.shuffle == b.shuffle && a.global_batch_size == b.global_batch_size &&
         a.micro_batch_size == b.micro_batch_size && a.dp_size == b.dp_size;
}

bool Identical(const TrainingConfig& a, const TrainingConfig& b) {
  static_assert(FieldCount<TrainingConfig>() == 10, "compare the new member of TrainingConfig");
  static_assert(FieldCount<RankCoords>() == 8,
                "RankCoords::operator== must compare the new member");
  return Identical(a.model, b.model) && a.seed == b.seed && Identical(a.optimizer, b.optimizer) &&
         Identical(a.scheduler, b.scheduler) && Identical(a.data, b.data) && a.frozen == b.frozen &&
         a.ranks == b.ranks && a.data_parallel_random_init == b.data_parallel_random_init &&
         a.rng_saving == b.rng_saving && a.rerun_mode == b.rerun_mode;
}

bool Identical(const std::vector<TrainingConfig>& a, const std::vector<TrainingConfig>& b) {
  return AllIdentical(
      a, b, [](const TrainingConfig& x, const TrainingConfig& y) { return Identical(x, y); });
}

bool Identical(const ShardingConfig& a, const ShardingConfig& b) {
  static_assert(FieldCount<ShardingConfig>() == 3, "compare the new member of ShardingConfig");
  return a.optimizer_format == b.optimizer_format && Identical(a.buffers, b.buffers) &&
         a.chained_avoid_prefix == b.chained_avoid_prefix;
}

}  // namespace ckptspec
