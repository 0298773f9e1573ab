#include "model/config_identity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "model/field_count.h"

namespace ckptspec {
namespace {

struct Inner {
  int a = 0;
  std::string b;
};
struct Outer {
  Inner inner;
  std::vector<int> list;
  double x = 1.0;
  std::optional<double> y;
};
struct Empty {};

TEST(FieldCount, CountsTheMembersOfAnAggregate) {
  static_assert(FieldCount<Inner>() == 2);
  static_assert(FieldCount<Outer>() == 4);  // a member aggregate counts once
  static_assert(FieldCount<Empty>() == 0);
  static_assert(FieldCount<TrainingConfig>() == 10);
}

// One change to one member of a TrainingConfig, named.
using ConfigChange = std::pair<const char*, std::function<void(TrainingConfig*)>>;

// A change to every member of TrainingConfig and of the structs it holds: each must make the
// config not identical to the unchanged one.
std::vector<ConfigChange> EveryMemberChanged() {
  return {
      {"model.name", [](TrainingConfig* c) { c->model.name = "vision"; }},
      {"model.num_layers", [](TrainingConfig* c) { c->model.num_layers += 1; }},
      {"model.hidden_size", [](TrainingConfig* c) { c->model.hidden_size += 1; }},
      {"model.num_attention_heads", [](TrainingConfig* c) { c->model.num_attention_heads += 1; }},
      {"model.num_query_groups", [](TrainingConfig* c) { c->model.num_query_groups += 1; }},
      {"model.ffn_hidden_size", [](TrainingConfig* c) { c->model.ffn_hidden_size += 1; }},
      {"model.vocab_size", [](TrainingConfig* c) { c->model.vocab_size += 1; }},
      {"model.gated_linear_unit", [](TrainingConfig* c) { c->model.gated_linear_unit ^= true; }},
      {"model.add_bias", [](TrainingConfig* c) { c->model.add_bias ^= true; }},
      {"model.tie_embeddings", [](TrainingConfig* c) { c->model.tie_embeddings ^= true; }},
      {"model.num_experts", [](TrainingConfig* c) { c->model.num_experts += 1; }},
      {"model.moe_ffn_hidden_size", [](TrainingConfig* c) { c->model.moe_ffn_hidden_size += 1; }},
      {"model.moe_layer_freq", [](TrainingConfig* c) { c->model.moe_layer_freq += 1; }},
      {"model.params_dtype", [](TrainingConfig* c) { c->model.params_dtype = DType::kFloat16; }},
      {"model.pipeline_split.first_stage_layers",
       [](TrainingConfig* c) { c->model.pipeline_split.first_stage_layers = 1; }},
      {"model.pipeline_split.last_stage_layers",
       [](TrainingConfig* c) { c->model.pipeline_split.last_stage_layers = 1; }},
      {"seed", [](TrainingConfig* c) { c->seed += 1; }},
      {"optimizer.grouping.weight_decay",
       [](TrainingConfig* c) { c->optimizer.grouping.weight_decay *= 2; }},
      {"optimizer.grouping.beta1", [](TrainingConfig* c) { c->optimizer.grouping.beta1 /= 2; }},
      {"optimizer.grouping.beta2", [](TrainingConfig* c) { c->optimizer.grouping.beta2 /= 2; }},
      {"optimizer.grouping.eps", [](TrainingConfig* c) { c->optimizer.grouping.eps *= 2; }},
      {"optimizer.grouping.lr_mult_overrides (one more)",
       [](TrainingConfig* c) {
         c->optimizer.grouping.lr_mult_overrides.push_back({"mlp", 2.0});
       }},
      {"optimizer.grouping.lr_mult_overrides[0].name_contains",
       [](TrainingConfig* c) { c->optimizer.grouping.lr_mult_overrides[0].name_contains = "x"; }},
      {"optimizer.grouping.lr_mult_overrides[0].lr_mult",
       [](TrainingConfig* c) { c->optimizer.grouping.lr_mult_overrides[0].lr_mult = 4.0; }},
      {"optimizer.grouping.lr_bound_overrides (one more)",
       [](TrainingConfig* c) {
         c->optimizer.grouping.lr_bound_overrides.push_back({"mlp", 1e-3, std::nullopt});
       }},
      {"optimizer.grouping.lr_bound_overrides[0].name_contains",
       [](TrainingConfig* c) { c->optimizer.grouping.lr_bound_overrides[0].name_contains = "x"; }},
      {"optimizer.grouping.lr_bound_overrides[0].max_lr",
       [](TrainingConfig* c) { c->optimizer.grouping.lr_bound_overrides[0].max_lr = 5e-3; }},
      {"optimizer.grouping.lr_bound_overrides[0].min_lr",
       [](TrainingConfig* c) { c->optimizer.grouping.lr_bound_overrides[0].min_lr = 0.0; }},
      {"optimizer.grouping.decoupled_lr",
       [](TrainingConfig* c) { c->optimizer.grouping.decoupled_lr = 5e-4; }},
      {"optimizer.grouping.decoupled_min_lr",
       [](TrainingConfig* c) { c->optimizer.grouping.decoupled_min_lr = 0.0; }},
      {"optimizer.freeze_family",
       [](TrainingConfig* c) { c->optimizer.freeze_family = FreezeFamily::kTorchOptim; }},
      {"optimizer.step_counter",
       [](TrainingConfig* c) { c->optimizer.step_counter = StepCounter::kPerGroup; }},
      {"optimizer.chaining",
       [](TrainingConfig* c) { c->optimizer.chaining = Chaining::kDenseExpert; }},
      {"optimizer.cpu_offload_fraction",
       [](TrainingConfig* c) { c->optimizer.cpu_offload_fraction = 0.5; }},
      {"optimizer.moment_dtype",
       [](TrainingConfig* c) { c->optimizer.moment_dtype = DType::kBFloat16; }},
      {"scheduler.init_lr", [](TrainingConfig* c) { c->scheduler.init_lr = 1e-5; }},
      {"scheduler.max_lr", [](TrainingConfig* c) { c->scheduler.max_lr *= 2; }},
      {"scheduler.min_lr", [](TrainingConfig* c) { c->scheduler.min_lr *= 2; }},
      {"scheduler.lr_warmup_steps", [](TrainingConfig* c) { c->scheduler.lr_warmup_steps += 1; }},
      {"scheduler.lr_decay_steps", [](TrainingConfig* c) { c->scheduler.lr_decay_steps += 1; }},
      {"scheduler.lr_decay_style",
       [](TrainingConfig* c) { c->scheduler.lr_decay_style = LrDecayStyle::kLinear; }},
      {"scheduler.wsd_decay_steps", [](TrainingConfig* c) { c->scheduler.wsd_decay_steps += 1; }},
      {"scheduler.lr_wsd_decay_style",
       [](TrainingConfig* c) { c->scheduler.lr_wsd_decay_style = WsdDecayStyle::kCosine; }},
      {"scheduler.start_wd", [](TrainingConfig* c) { c->scheduler.start_wd *= 2; }},
      {"scheduler.end_wd", [](TrainingConfig* c) { c->scheduler.end_wd *= 2; }},
      {"scheduler.wd_incr_steps", [](TrainingConfig* c) { c->scheduler.wd_incr_steps += 1; }},
      {"scheduler.wd_incr_style",
       [](TrainingConfig* c) { c->scheduler.wd_incr_style = WdIncrStyle::kLinear; }},
      {"data.sampler", [](TrainingConfig* c) { c->data.sampler = DataSampler::kPerRank; }},
      {"data.num_samples", [](TrainingConfig* c) { c->data.num_samples += 1; }},
      {"data.seed", [](TrainingConfig* c) { c->data.seed += 1; }},
      {"data.shuffle", [](TrainingConfig* c) { c->data.shuffle ^= true; }},
      {"data.global_batch_size", [](TrainingConfig* c) { c->data.global_batch_size += 1; }},
      {"data.micro_batch_size", [](TrainingConfig* c) { c->data.micro_batch_size += 1; }},
      {"data.dp_size", [](TrainingConfig* c) { c->data.dp_size += 1; }},
      {"frozen",
       [](TrainingConfig* c) { c->frozen.push_back("embedding.word_embeddings.weight"); }},
      {"ranks (one more)", [](TrainingConfig* c) { c->ranks.push_back(RankCoords{}); }},
      {"ranks[0]", [](TrainingConfig* c) { c->ranks[0].dp = 1; }},
      {"data_parallel_random_init",
       [](TrainingConfig* c) { c->data_parallel_random_init ^= true; }},
      {"rng_saving", [](TrainingConfig* c) { c->rng_saving = RngSaving::kRankLocal; }},
      {"rerun_mode", [](TrainingConfig* c) { c->rerun_mode = RerunMode::kDisabled; }},
  };
}

TEST(ConfigIdentity, EveryMemberOfATrainingConfigCounts) {
  TrainingConfig base;
  base.optimizer.grouping.lr_mult_overrides.push_back({"linear_qkv", 0.5});
  base.optimizer.grouping.lr_bound_overrides.push_back({"self_attention", 2e-3, 1e-6});
  ASSERT_TRUE(Identical(base, base));
  const TrainingConfig copy = base;
  EXPECT_TRUE(Identical(base, copy));
  for (const ConfigChange& change : EveryMemberChanged()) {
    TrainingConfig changed = base;
    change.second(&changed);
    EXPECT_FALSE(Identical(base, changed)) << change.first;
    EXPECT_FALSE(Identical(changed, base)) << change.first;
    EXPECT_FALSE(Identical(std::vector<TrainingConfig>{base, base},
                           std::vector<TrainingConfig>{base, changed}))
        << change.first;
  }
  EXPECT_FALSE(Identical(std::vector<TrainingConfig>{base}, std::vector<TrainingConfig>{}));
}

TEST(ConfigIdentity, FloatingPointMembersCompareByBits) {
  TrainingConfig a, b;
  a.scheduler.min_lr = 0.0;
  b.scheduler.min_lr = -0.0;
  EXPECT_FALSE(Identical(a, b)) << "0.0 and -0.0 are different inputs";
  a.scheduler.min_lr = b.scheduler.min_lr = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(Identical(a, b)) << "a NaN is identical to the same NaN";
  a.optimizer.grouping.decoupled_min_lr = 0.0;
  EXPECT_FALSE(Identical(a, b)) << "a set optional differs from an unset one";
}

Layout MakeLayout(int64_t world, int64_t tp, int64_t pp, int64_t ep, const char* order) {
  ParallelSizes sizes;
  sizes.tp = tp;
  sizes.pp = pp;
  sizes.ep = ep;
  RankOrder ranks;
  EXPECT_TRUE(RankOrder::Parse(order, &ranks).ok());
  Layout layout;
  const Status made = Layout::Make(world, sizes, ranks, &layout);
  EXPECT_TRUE(made.ok()) << made.ToString();
  return layout;
}

TEST(ConfigIdentity, LayoutsDifferInSizesOrderAndModules) {
  const Layout base = MakeLayout(8, 2, 2, 1, "tp-cp-ep-dp-pp");
  EXPECT_TRUE(Identical(base, MakeLayout(8, 2, 2, 1, "tp-cp-ep-dp-pp")));
  EXPECT_FALSE(Identical(base, MakeLayout(8, 2, 1, 1, "tp-cp-ep-dp-pp")));  // dp 4 pp 1
  EXPECT_FALSE(Identical(base, MakeLayout(8, 2, 2, 2, "tp-cp-ep-dp-pp")));  // ep 2
  EXPECT_FALSE(Identical(base, MakeLayout(8, 2, 2, 1, "tp-dp-cp-ep-pp")));  // order
  EXPECT_FALSE(Identical(base, MakeLayout(16, 2, 2, 1, "tp-cp-ep-dp-pp")));

  const HeterogeneousLayout single = HeterogeneousLayout::Single(base);
  EXPECT_TRUE(Identical(single, HeterogeneousLayout::Single(base)));
  EXPECT_FALSE(Identical(single, HeterogeneousLayout::Single(base, "language")));
  HeterogeneousLayout two;
  ASSERT_TRUE(HeterogeneousLayout::Make({ModuleLayout{"vision", 0, MakeLayout(2, 1, 1, 1, "tp")},
                                         ModuleLayout{"language", 2, base}},
                                        &two)
                  .ok());
  HeterogeneousLayout moved;
  ASSERT_TRUE(HeterogeneousLayout::Make({ModuleLayout{"language", 0, base},
                                         ModuleLayout{"vision", 8, MakeLayout(2, 1, 1, 1, "tp")}},
                                        &moved)
                  .ok());
  EXPECT_FALSE(Identical(two, moved));
  EXPECT_FALSE(Identical(two, HeterogeneousLayout::Single(base, "language")));
}

TEST(ConfigIdentity, ShardingConfigsDifferInEveryMember) {
  const ShardingConfig base;
  EXPECT_TRUE(Identical(base, ShardingConfig()));
  ShardingConfig changed = base;
  changed.optimizer_format = OptimizerFormat::kDpReshardable;
  EXPECT_FALSE(Identical(base, changed));
  changed = base;
  changed.buffers.bucket_size += 1;
  EXPECT_FALSE(Identical(base, changed));
  changed = base;
  changed.buffers.param_alignment += 1;
  EXPECT_FALSE(Identical(base, changed));
  changed = base;
  changed.chained_avoid_prefix ^= true;
  EXPECT_FALSE(Identical(base, changed));
}

}  // namespace
}  // namespace ckptspec
