#include "generators/run_gen.h"

#include "generators/config_gen.h"
#include "generators/layout_gen.h"
#include "generators/size_guard.h"

namespace ckptspec {
namespace gen {
namespace {

void FitShardingToConfigs(ShardingConfig* sharding, std::vector<TrainingConfig>* configs) {
  if (sharding->optimizer_format != OptimizerFormat::kDpReshardable) return;
  for (TrainingConfig& c : *configs) {
    if (c.model.num_experts > 0) c.optimizer.chaining = Chaining::kDenseExpert;
  }
}

}  // namespace

rc::Gen<RunSpec> RunUpTo(int max_world, bool allow_heterogeneous) {
  return AtNonNegativeSize(rc::gen::exec([max_world, allow_heterogeneous] {
    RunSpec run;
    const bool hetero = allow_heterogeneous && *rc::gen::inRange(0, 5) == 0;
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

rc::Gen<RunSpec> ResumeRunFor(const RunSpec& saved, int max_world, bool change_layout) {
  return AtNonNegativeSize(rc::gen::exec([saved, max_world, change_layout] {
    RunSpec run = saved;
    if (!change_layout) return run;
    std::vector<ModuleLayout> modules;
    int64_t next = 0;
    for (size_t i = 0; i < saved.configs.size(); ++i) {
      const ModuleLayout& old = saved.layout.modules()[i];
      const Layout layout = *LayoutFor(saved.configs[i].model, max_world);
      modules.push_back({old.name, next, layout});
      next += layout.world_size();
      FitConfigToLayout(layout, &run.configs[i]);
    }
    if (!HeterogeneousLayout::Make(modules, &run.layout).ok()) RC_FAIL("resume layout invalid");
    return run;
  }));
}

}  // namespace gen

void showValue(const RunSpec& run, std::ostream& os) { os << DescribeRun(run); }

}  // namespace ckptspec
