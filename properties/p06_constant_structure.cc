// P6, constant structure: the set of (key, global shape, chunk, dtype, replica id) of a save
// depends on layout and config only, never on state, except that under the torch.optim freezing
// family a parameter's optimizer entries exist once it has state (from its first step:
// training_state.h). For a generated run the target's framework dicts after k1 and after k2 > k1
// iterations (k1 >= 1 when a module follows the torch.optim family, so that both saves hold the
// state of the same parameters), and in steady state and in a rerun fault
// (WILL_RERUN_FROM_CHECKPOINT, reached through the rerun machine's own transitions), have an empty
// DiffStructure. On the engine side, a save of the steady state and a save of the fault state
// (each sync or async) are interchangeable in structure: each loads under the other's templates
// (the default strict mode fails on a requested key the checkpoint lacks).
// Catches: B04 (the rerun object only present in fault saves), any state-dependent key set.
#include <string>
#include <vector>

#include "generators/run_gen.h"
#include "model/validate.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/run_faults.h"

namespace ckptspec {
namespace {

std::string Diff(const std::vector<ShardedStateDict>& a, const std::vector<ShardedStateDict>& b) {
  const StructureDiff d = DiffStructure(RunSignature(a, false), RunSignature(b, false));
  return d.empty() ? "" : FormatViolations(d.ToViolations());
}

// Loads checkpoint `iteration` under templates made from `dicts` (data and common not compared).
Status LoadUnder(Engine& engine, int64_t iteration, const std::vector<ShardedStateDict>& dicts) {
  LoadRequest request;
  request.iteration = iteration;
  for (const ShardedStateDict& d : dicts) request.templates.push_back(TemplateOf(d));
  LoadResult result;
  return engine.Load(std::move(request), &result);
}

}  // namespace

void CheckConstantStructure(const TargetFactory& factory) {
  RunSpec run = *gen::RunUpTo(16);
  bool torch_optim = false;
  for (const TrainingConfig& c : run.configs) {
    torch_optim |= c.optimizer.freeze_family == FreezeFamily::kTorchOptim;
  }
  const int64_t k1 = *rc::gen::inRange<int64_t>(torch_optim ? 1 : 0, 3);
  const int64_t k2 = k1 + *rc::gen::inRange<int64_t>(1, 3);
  const bool async_steady = factory.capabilities.async && *rc::gen::arbitrary<bool>();
  const bool async_fault = factory.capabilities.async && *rc::gen::arbitrary<bool>();
  std::vector<TrainingState> early, late;
  CKPTSPEC_RC_ASSERT_OK(TrainedStates(&run, k1, false, &early));
  CKPTSPEC_RC_ASSERT_OK(TrainedStates(&run, k2, false, &late));
  // A fault exists only in validate_results mode (the mode is config: it may change structure).
  RunSpec fault_run = run;
  std::vector<TrainingState> fault, steady = late;
  CKPTSPEC_RC_ASSERT_OK(TrainedStates(&fault_run, k2, /*fault=*/true, &fault));
  const bool mode_forced = fault_run.configs.front().rerun_mode != run.configs.front().rerun_mode;
  if (mode_forced) CKPTSPEC_RC_ASSERT_OK(TrainedStates(&fault_run, k2, false, &steady));
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  compare the structure of the framework's"
           << " dicts after " << k1 << " and " << k2 << " iterations, and after " << k2
           << " in steady state and in WILL_RERUN_FROM_CHECKPOINT"
           << (mode_forced ? " (rerun mode set to validate_results)" : "")
           << "; then save iteration " << k1 << " (steady, " << (async_steady ? "async" : "sync")
           << ") and " << k2 << " (fault, " << (async_fault ? "async" : "sync")
           << ") and load each under the other's templates\n";
  const RunShape shape = ShapeOf(run);
  RC_CLASSIFY(shape.heterogeneous, "heterogeneous");
  RC_CLASSIFY(shape.dp_reshardable, "dp_reshardable");
  RC_CLASSIFY(shape.moe, "moe");
  RC_CLASSIFY(async_steady != async_fault, "sync vs async");
  RC_CLASSIFY(mode_forced, "rerun mode forced to validate_results");
  RC_CLASSIFY(torch_optim, "torch.optim freezing family");

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  std::vector<ShardedStateDict> d_early, d_late, d_steady, d_fault;
  CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, early, run.sharding, &d_early));
  CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, late, run.sharding, &d_late));
  CKPTSPEC_RC_ASSERT_OK(
      target.framework().ToStateDicts(run.layout, steady, run.sharding, &d_steady));
  CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, fault, run.sharding, &d_fault));
  CKPTSPEC_RC_ASSERT_SAME(Diff(d_early, d_late), "structure changed with training");
  CKPTSPEC_RC_ASSERT_SAME(Diff(d_steady, d_fault),
                          "structure of a fault save differs from steady state");

  SaveOptions steady_save, fault_save;
  steady_save.async = async_steady;
  fault_save.async = async_fault;
  std::vector<ShardedStateDict> d_steady_early;
  std::vector<TrainingState> steady_early = early;
  if (mode_forced) CKPTSPEC_RC_ASSERT_OK(TrainedStates(&fault_run, k1, false, &steady_early));
  CKPTSPEC_RC_ASSERT_OK(
      target.framework().ToStateDicts(run.layout, steady_early, run.sharding, &d_steady_early));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Save(k1, d_steady_early, steady_save));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Save(k2, d_fault, fault_save));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());
  CKPTSPEC_RC_ASSERT_OK(LoadUnder(target.engine(), k1, d_fault));
  CKPTSPEC_RC_ASSERT_OK(LoadUnder(target.engine(), k2, d_steady_early));
}

}  // namespace ckptspec
