#include "generators/config_gen.h"

#include <algorithm>
#include <sstream>

#include "generators/layout_gen.h"
#include "generators/size_guard.h"
#include "model/describe.h"
#include "model/scheduler.h"

namespace ckptspec {
namespace gen {

rc::Gen<TrainingConfig> TrainingConfigFor(const Layout& layout, const ModelConfig& model) {
  return AtNonNegativeSize(rc::gen::exec([layout, model] {
    TrainingConfig c;
    c.model = model;
    c.seed = *rc::gen::inRange<uint64_t>(1, 1000);
    for (int64_t rank = 0; rank < layout.world_size(); ++rank) {
      if (rank == 0) c.ranks.clear();
      c.ranks.push_back(layout.Coords(rank));
    }
    c.data_parallel_random_init = *rc::gen::elementOf(std::vector<bool>{false, true});
    c.rerun_mode = *rc::gen::elementOf(std::vector<RerunMode>{
        RerunMode::kValidateResults, RerunMode::kDisabled, RerunMode::kReportDeterminismStats});

    OptimizerConfig& o = c.optimizer;
    o.step_counter = *rc::gen::elementOf(
        std::vector<StepCounter>{StepCounter::kPerParameter, StepCounter::kPerGroup});
    o.chaining =
        model.num_experts > 0
            ? *rc::gen::elementOf(std::vector<Chaining>{Chaining::kSingle, Chaining::kDenseExpert})
            : Chaining::kSingle;
    o.cpu_offload_fraction = *rc::gen::elementOf(std::vector<double>{0.0, 0.5, 1.0});
    if (*rc::gen::inRange(0, 3) == 0) {
      o.grouping.lr_mult_overrides.push_back(
          {*rc::gen::elementOf(std::vector<std::string>{"linear_qkv", "embedding", "mlp"}),
           *rc::gen::elementOf(std::vector<double>{0.5, 2.0})});
    }
    if (*rc::gen::inRange(0, 4) == 0) o.grouping.decoupled_lr = 5e-4;
    // Per-region LR bounds (µP-style), sometimes two regions with different bounds: groups that
    // differ only in their LR bounds.
    const int bound_regions = *rc::gen::elementOf(std::vector<int>{0, 0, 1, 2});
    std::vector<std::string> regions{"self_attention", "mlp", "linear_fc2", "linear_qkv"};
    for (int i = 0; i < bound_regions; ++i) {
      const std::string region = *rc::gen::elementOf(regions);
      regions.erase(std::find(regions.begin(), regions.end(), region));
      LrBoundOverride b;
      b.name_contains = region;
      b.max_lr = *rc::gen::elementOf(std::vector<double>{5e-4, 2e-3, 4e-3});
      if (*rc::gen::inRange(0, 2) == 0)
        b.min_lr = *rc::gen::elementOf(std::vector<double>{0.0, 1e-6});
      o.grouping.lr_bound_overrides.push_back(b);
    }

    SchedulerConfig& s = c.scheduler;
    s.lr_decay_style = *rc::gen::elementOf(std::vector<LrDecayStyle>{
        LrDecayStyle::kConstant, LrDecayStyle::kLinear, LrDecayStyle::kCosine,
        LrDecayStyle::kInverseSquareRoot, LrDecayStyle::kWSD});
    s.lr_decay_steps = 64 * *rc::gen::inRange<int64_t>(1, 8);
    s.lr_warmup_steps = *rc::gen::elementOf(std::vector<int64_t>{0, 8, 32});
    if (s.lr_decay_style == LrDecayStyle::kWSD) s.wsd_decay_steps = s.lr_decay_steps / 2;
    s.init_lr = s.lr_warmup_steps > 0 ? 1e-5 : 0.0;
    if (*rc::gen::inRange(0, 3) == 0) {
      s.wd_incr_style =
          *rc::gen::elementOf(std::vector<WdIncrStyle>{WdIncrStyle::kLinear, WdIncrStyle::kCosine});
      s.start_wd = 0.01;
      s.end_wd = 0.1;
      s.wd_incr_steps = s.lr_decay_steps;
    }

    DataConfig& d = c.data;
    d.dp_size = layout.dp();
    d.micro_batch_size = *rc::gen::elementOf(std::vector<int64_t>{1, 2});
    d.global_batch_size =
        d.micro_batch_size * d.dp_size * *rc::gen::elementOf(std::vector<int64_t>{1, 2, 3});
    // Few samples, so that runs cross epoch boundaries.
    d.num_samples =
        d.global_batch_size * *rc::gen::inRange<int64_t>(1, 4) + *rc::gen::inRange<int64_t>(0, 3);
    d.shuffle = *rc::gen::elementOf(std::vector<bool>{true, false});
    d.seed = *rc::gen::inRange<uint64_t>(1, 1000);

    // Freeze a few parameters, sometimes: every instance of a stacked checkpoint key together
    // (a stacked key's optimizer state cannot have holes; state_sharding.h).
    const std::vector<ParameterSpec> params = ModelParameters(model);
    const int frozen_keys = *rc::gen::elementOf(std::vector<int>{0, 0, 1, 2});
    for (int i = 0; i < frozen_keys; ++i) {
      const std::string key = (*rc::gen::elementOf(params)).key;
      for (const ParameterSpec& p : params) {
        if (p.key == key && std::find(c.frozen.begin(), c.frozen.end(), p.name) == c.frozen.end()) {
          c.frozen.push_back(p.name);
        }
      }
    }
    // The freezing family (training_state.h), drawn last so that the draws above stay as they
    // were: torch.optim's in a third of the configs, with its per-parameter step and no offload.
    if (*rc::gen::inRange(0, 3) == 0) {
      o.freeze_family = FreezeFamily::kTorchOptim;
      o.step_counter = StepCounter::kPerParameter;
      o.cpu_offload_fraction = 0.0;
    }
    // Per-DP-rank data loaders in a quarter of the configs (at every size: elementOf, where
    // inRange narrows at small sizes), drawn after everything else for the same reason
    // (num_samples >= global_batch_size >= dp_size leaves no shard empty).
    if (*rc::gen::elementOf(std::vector<int>{0, 1, 2, 3}) == 0) d.sampler = DataSampler::kPerRank;
    // The RNG saved rank-local (no sharding declared) in a quarter of the configs, drawn last.
    if (*rc::gen::elementOf(std::vector<int>{0, 1, 2, 3}) == 0)
      c.rng_saving = RngSaving::kRankLocal;
    const Status valid = ValidateTrainingConfig(c);
    if (!valid.ok()) RC_FAIL("TrainingConfigFor built an invalid config: " + valid.ToString());
    return c;
  }));
}

rc::Gen<LoadFlags> LoadFlagsGen(bool allow_conflict) {
  return AtNonNegativeSize(rc::gen::exec([allow_conflict] {
    LoadFlags f;
    // Mostly plain resumes; each flag sometimes.
    auto sometimes = [] { return *rc::gen::inRange(0, 5) == 0; };
    f.finetune = sometimes();
    f.no_load_optim = sometimes();
    f.no_load_rng = sometimes();
    f.override_scheduler = sometimes();
    f.use_checkpoint_scheduler = sometimes();
    if (f.override_scheduler && f.use_checkpoint_scheduler && !allow_conflict) {
      f.use_checkpoint_scheduler = false;
    }
    f.reset_dataloader = sometimes();
    return f;
  }));
}

}  // namespace gen

void showValue(const TrainingConfig& config, std::ostream& os) {
  os << DescribeTrainingConfig(config);
}
void showValue(const LoadFlags& flags, std::ostream& os) { os << DescribeLoadFlags(flags); }
void showValue(LrDecayStyle style, std::ostream& os) { os << LrDecayStyleName(style); }
void showValue(IdentityField field, std::ostream& os) { os << IdentityFieldName(field); }

}  // namespace ckptspec
