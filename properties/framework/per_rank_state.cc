// P12's framework form, per-rank state: resumed on the same layout or with another DP size, each
// rank gets the RNG the load rules assign it (its own saved one, the lowest DP rank's of its TP
// and PP coordinates under a DP change, a fresh one where L7 does not load), the saved data
// position and, on an unchanged layout, its own rerun machine (model/observation_rules.h: L7, L8,
// L9).
#include "generators/framework_job_gen.h"
#include "model/describe.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkPerRankState(const TargetFactory& factory) {
  const FrameworkSupport& s = SupportOf(factory);
  const FrameworkJob saved_job =
      *gen::JobWithin(s, factory.capabilities.plan_cache, kFrameworkMaxWorld);
  const bool change = factory.capabilities.resharding && *rc::gen::arbitrary<bool>();
  const FrameworkJob job = *gen::ResumeJobFor(saved_job, s, kFrameworkMaxWorld, change);
  FrameworkLoad load;
  load.flags.no_load_rng = s.Has(s.load_flags, "no_load_rng") && gen::OneIn(4);
  const int64_t k = *rc::gen::inRange<int64_t>(1, 4);
  RC_LOG() << "scenario:\n  save: " << DescribeJob(saved_job) << "\n  train " << k
           << ", save, restart\n  load: " << DescribeJob(job) << "\n  flags "
           << DescribeLoadFlags(load.flags) << "\n";
  RC_CLASSIFY(JobLayout(job).world_size() != JobLayout(saved_job).world_size(),
              "world size changed");

  FrameworkPair pair(factory, TargetOptions());
  const JudgedLoad judged = TrainSaveRestartLoad(pair, saved_job, k, job, load);
  if (!judged.loaded_ok) return;
  const LoadCase rules{saved_job, judged.saved, job, judged.fresh, load.flags};
  AssertLoaded(pair, rules, judged.loaded,
               {StateClass::kRng, StateClass::kData, StateClass::kRerun}, "after the load");
}

}  // namespace ckptspec
