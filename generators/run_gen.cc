#include "generators/run_gen.h"

#include "generators/config_gen.h"
#include "generators/layout_gen.h"
#include "generators/size_guard.h"
#include "generators/world_cap.h"

namespace ckptspec {
namespace gen {
namespace {

void FitShardingToConfigs(ShardingConfig* sharding, std::vector<TrainingConfig>* configs) {
  if (sharding->optimizer_format != OptimizerFormat::kDpReshardable) return;
  for (TrainingConfig& c : *configs) {
    if (c.model.num_experts > 0) c.optimizer.chaining = Chaining::kDenseExpert;
    // dp_reshardable is Megatron's distributed optimizer, with Megatron's freezing.
    c.optimizer.freeze_family = FreezeFamily::kMegatron;
  }
}

}  // namespace

rc::Gen<RunSpec> RunUpTo(int max_world, bool allow_heterogeneous) {
  max_world = CappedWorld(max_world);
  return AtNonNegativeSize(rc::gen::exec([max_world, allow_heterogeneous] {
    RunSpec run;
    // Two modules need two ranks (a world capped at one has none to spare).
    const bool hetero = allow_heterogeneous && max_world >= 2 && *rc::gen::inRange(0, 5) == 0;
    if (hetero) {
      const HeterogeneousCase h = *Heterogeneous(std::max(1, max_world / 2));
      run.layout = h.layout;
      for (size_t i = 0; i < h.models.size(); ++i) {
        run.configs.push_back(*TrainingConfigFor(h.layout.modules()[i].layout, h.models[i]));
        // One training loop drives every module: one rerun state machine mode.
        run.configs.back().rerun_mode = run.configs.front().rerun_mode;
      }
    } else {
      const LayoutAndModel lm = *LayoutAndModelUpTo(max_world);
      run.layout = HeterogeneousLayout::Single(lm.layout);
      run.configs.push_back(*TrainingConfigFor(lm.layout, lm.model));
    }
    run.sharding.optimizer_format = *rc::gen::elementOf(std::vector<OptimizerFormat>{
        OptimizerFormat::kFullyReshardable, OptimizerFormat::kDpReshardable});
    FitShardingToConfigs(&run.sharding, &run.configs);
    return run;
  }));
}

RunSpec WithOptimizerFormat(RunSpec run, OptimizerFormat format) {
  run.sharding.optimizer_format = format;
  FitShardingToConfigs(&run.sharding, &run.configs);
  return run;
}

RunSpec WithTorchOptimFreezing(RunSpec run) {
  run.sharding.optimizer_format = OptimizerFormat::kFullyReshardable;
  for (TrainingConfig& c : run.configs) {
    c.optimizer.freeze_family = FreezeFamily::kTorchOptim;
    c.optimizer.step_counter = StepCounter::kPerParameter;
    c.optimizer.cpu_offload_fraction = 0.0;
  }
  return run;
}

RunSpec WithMomentDtype(RunSpec run, DType dtype) {
  for (TrainingConfig& c : run.configs) c.optimizer.moment_dtype = dtype;
  return run;
}

rc::Gen<RunSpec> ResumePrecision(const RunSpec& saved, RunSpec resume) {
  return AtNonNegativeSize(rc::gen::exec([saved, base = std::move(resume)] {
    RunSpec resume = base;
    // Drawn with elementOf, at every size (an integer range narrows at small sizes).
    const int kind = *rc::gen::elementOf(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    const bool params = kind == 0 || kind == 2;
    const bool moments = kind == 1 || kind == 2;
    for (size_t m = 0; m < resume.configs.size() && m < saved.configs.size(); ++m) {
      TrainingConfig& c = resume.configs[m];
      const TrainingConfig& was = saved.configs[m];
      if (params) {
        std::vector<DType> others;
        for (DType d : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
          if (d != was.model.params_dtype) others.push_back(d);
        }
        c.model.params_dtype = *rc::gen::elementOf(others);
      }
      if (moments) {
        c.optimizer.moment_dtype =
            was.optimizer.moment_dtype == DType::kFloat32 ? DType::kBFloat16 : DType::kFloat32;
      }
    }
    return resume;
  }));
}

RunSpec WithPerRankLoaders(RunSpec run) {
  for (TrainingConfig& c : run.configs) c.data.sampler = DataSampler::kPerRank;
  return run;
}

namespace {

// `saved` with each module on the layout pick(module config, module layout) gives.
template <typename Pick>
RunSpec RelaidOut(const RunSpec& saved, Pick pick) {
  RunSpec run = saved;
  std::vector<ModuleLayout> modules;
  int64_t next = 0;
  for (size_t i = 0; i < saved.configs.size(); ++i) {
    const ModuleLayout& old = saved.layout.modules()[i];
    const Layout layout = pick(saved.configs[i].model, old.layout);
    modules.push_back({old.name, next, layout});
    next += layout.world_size();
    FitConfigToLayout(layout, &run.configs[i]);
  }
  if (!HeterogeneousLayout::Make(modules, &run.layout).ok()) RC_FAIL("resume layout invalid");
  return run;
}

}  // namespace

rc::Gen<RunSpec> ResumeRunFor(const RunSpec& saved, int max_world, bool change_layout) {
  return AtNonNegativeSize(rc::gen::exec([saved, max_world, change_layout] {
    if (!change_layout) return saved;
    const int per_module = CappedWorldPerModule(max_world, saved.configs.size());
    return RelaidOut(saved, [per_module](const ModelConfig& model, const Layout&) {
      return *LayoutFor(model, per_module);
    });
  }));
}

rc::Gen<RunSpec> ResumeRunChangingOnlyDp(const RunSpec& saved, int max_world,
                                         DpDirection direction) {
  return AtNonNegativeSize(rc::gen::exec([saved, max_world, direction] {
    // Under a world cap each module may grow by an equal share of the ranks the cap leaves.
    const bool capped = CurrentWorldCap() > 0;
    const int slack =
        std::max(0, CappedWorld(max_world) - static_cast<int>(saved.layout.world_size()));
    const int modules = static_cast<int>(saved.configs.size());
    return RelaidOut(saved, [=](const ModelConfig& model, const Layout& from) {
      const int budget = capped ? static_cast<int>(from.world_size()) + slack / modules : max_world;
      return *LayoutChangingOnlyDp(model, from, budget, direction);
    });
  }));
}

}  // namespace gen

void showValue(const RunSpec& run, std::ostream& os) { os << DescribeRun(run); }

}  // namespace ckptspec
