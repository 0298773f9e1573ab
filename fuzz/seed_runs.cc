#include "fuzz/seed_runs.h"

#include <cstdio>
#include <cstdlib>

namespace ckptspec {
namespace {

SeedRun MakeSeedRun(const char* name, int64_t world, const ParallelSizes& sizes,
                    const ModelConfig& model, OptimizerFormat format) {
  Layout layout;
  const Status made = Layout::Make(world, sizes, RankOrder(), &layout);
  if (!made.ok()) {
    std::fprintf(stderr, "seed run %s: %s\n", name, made.ToString().c_str());
    std::abort();
  }
  SeedRun seed{name, {}};
  TrainingConfig config;
  config.model = model;
  config.data.global_batch_size = 2 * layout.dp();
  config.data.micro_batch_size = 1;
  FitConfigToLayout(layout, &config);
  if (model.num_experts > 0) config.optimizer.chaining = Chaining::kDenseExpert;
  seed.run.layout = HeterogeneousLayout::Single(layout);
  seed.run.configs.push_back(config);
  seed.run.sharding.optimizer_format = format;
  return seed;
}

// A dense model: `layers` layers; hidden size, ffn size and vocabulary all `hidden`.
ModelConfig DenseModel(int layers, int hidden, int heads) {
  ModelConfig m;
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_attention_heads = heads;
  m.ffn_hidden_size = hidden;
  m.vocab_size = hidden;
  return m;
}

}  // namespace

const std::vector<SeedRun>& SeedRuns() {
  static const std::vector<SeedRun> runs = [] {
    const ModelConfig dense = DenseModel(2, 8, 2);
    const ModelConfig tiny = DenseModel(1, 4, 1);
    ModelConfig moe = dense;
    moe.num_experts = 2;
    moe.moe_ffn_hidden_size = 4;
    return std::vector<SeedRun>{
        MakeSeedRun("tp2_pp2_dp2_dense_fully", 8, {2, 2, 0, 1, 1, 0}, dense,
                    OptimizerFormat::kFullyReshardable),
        MakeSeedRun("tp1_dp4_ep2_moe_dp_reshardable", 4, {1, 1, 0, 1, 2, 0}, moe,
                    OptimizerFormat::kDpReshardable),
        MakeSeedRun("tp2_dp1_moe_fully", 2, {2, 1, 0, 1, 1, 0}, moe,
                    OptimizerFormat::kFullyReshardable),
        // Small files: the fast seeds of checkpoint_dir_fuzzer.
        MakeSeedRun("dp2_tiny_fully", 2, {1, 1, 0, 1, 1, 0}, tiny,
                    OptimizerFormat::kFullyReshardable),
        // Each rank's RNG saved rank-local (and distinct: data_parallel_random_init): rank-local
        // objects in the index, the signature and the templates.
        [&] {
          SeedRun s = MakeSeedRun("dp2_tiny_rank_local_rng", 2, {1, 1, 0, 1, 1, 0}, tiny,
                                  OptimizerFormat::kFullyReshardable);
          s.run.configs[0].rng_saving = RngSaving::kRankLocal;
          s.run.configs[0].data_parallel_random_init = true;
          return s;
        }(),
    };
  }();
  return runs;
}

}  // namespace ckptspec
