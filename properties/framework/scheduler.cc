// P10's framework form, scheduler and iteration semantics per the flag table: resumed with
// generated flags and, sometimes, a changed scheduler (max_lr, min_lr, decay style), the
// iteration, the data position, the scheduler and every group's LR bounds, lr and weight decay
// are what the load rules say (model/observation_rules.h: L2, L5, L6, L9) -- under
// override_scheduler the new schedule, never the stale saved bounds (B05) -- or both the
// framework and the spec refuse; and one step later every group still follows its scheduler.
#include "generators/framework_job_gen.h"
#include "model/describe.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkScheduler(const TargetFactory& factory) {
  const FrameworkSupport& s = SupportOf(factory);
  const FrameworkJob saved_job =
      *gen::JobWithin(s, factory.capabilities.plan_cache, kFrameworkMaxWorld);
  FrameworkJob job = saved_job;
  const int change = *rc::gen::inRange(0, 4);  // 0: unchanged; 1 max_lr, 2 min_lr, 3 style
  SchedulerConfig& c = job.scheduler;
  if (change == 1) c.max_lr *= 10;
  if (change == 2) c.min_lr = c.min_lr > 0 ? c.min_lr / 2 : c.max_lr / 20;
  if (change == 3) {
    c.lr_decay_style =
        c.lr_decay_style == LrDecayStyle::kLinear ? LrDecayStyle::kCosine : LrDecayStyle::kLinear;
    c.wsd_decay_steps = 0;
  }
  if (c.lr_decay_style == LrDecayStyle::kConstant && change != 0) c.min_lr = c.max_lr;
  if (!ValidateFrameworkJob(job).ok()) job = saved_job;
  FrameworkLoad load;
  const int flags = *rc::gen::inRange(0, 4);
  if (flags == 1 && s.Has(s.load_flags, "override_scheduler")) load.flags.override_scheduler = true;
  if (flags == 2 && s.Has(s.load_flags, "use_checkpoint_scheduler")) {
    load.flags.use_checkpoint_scheduler = true;
  }
  if (flags == 3) load.flags = *gen::LoadFlagsWithin(s, true);
  const int64_t k = *rc::gen::inRange<int64_t>(1, 4);
  RC_LOG() << "scenario:\n  save: " << DescribeJob(saved_job) << "\n  train " << k
           << ", save, restart\n  load: " << DescribeJob(job) << "\n  flags "
           << DescribeLoadFlags(load.flags) << "; then train 1\n";
  RC_CLASSIFY(change != 0, "scheduler changed");
  RC_CLASSIFY(load.flags.override_scheduler, "override_scheduler");
  RC_CLASSIFY(load.flags.use_checkpoint_scheduler, "use_checkpoint_scheduler");

  FrameworkPair pair(factory, TargetOptions());
  const JudgedLoad judged = TrainSaveRestartLoad(pair, saved_job, k, job, load);
  if (!judged.loaded_ok) return;
  const LoadCase rules{saved_job, judged.saved, job, judged.fresh, load.flags};
  AssertLoaded(
      pair, rules, judged.loaded,
      {StateClass::kIteration, StateClass::kScheduler, StateClass::kGroups, StateClass::kData},
      "after the load");
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, CheckGroupsFollowScheduler(job, judged.loaded),
                                    "after the load");
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(1));
  Observation stepped;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Observe(&stepped));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, CheckGroupsFollowScheduler(job, stepped),
                                    "one step after the load");
}

}  // namespace ckptspec
