// P3's framework form, resharding equivalence: the framework saves under one layout and a new
// process loads under another (with generated flags, sometimes); either both it and the spec
// refuse (the flag table's error), or every state class is what the load rules say
// (model/observation_rules.h), the model summed over ranks.
#include "generators/framework_job_gen.h"
#include "model/describe.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkResharding(const TargetFactory& factory) {
  const FrameworkSupport& s = SupportOf(factory);
  const FrameworkJob saved_job =
      *gen::JobWithin(s, factory.capabilities.plan_cache, kFrameworkMaxWorld);
  const FrameworkJob job = *gen::ResumeJobFor(saved_job, s, kFrameworkMaxWorld, true);
  const int64_t k = *rc::gen::inRange<int64_t>(1, 3);
  FrameworkLoad load;
  if (gen::OneIn(3)) load.flags = *gen::LoadFlagsWithin(s, false);
  RC_LOG() << "scenario:\n  save: " << DescribeJob(saved_job) << "\n  train " << k
           << ", save, restart\n  load: " << DescribeJob(job) << "\n  flags "
           << DescribeLoadFlags(load.flags) << "\n";

  FrameworkPair pair(factory, TargetOptions());
  const JudgedLoad judged = TrainSaveRestartLoad(pair, saved_job, k, job, load);
  RC_CLASSIFY(JobLayout(job).world_size() != JobLayout(saved_job).world_size(),
              "world size changed");
  if (!judged.loaded_ok) return;
  const LoadCase rules{saved_job, judged.saved, job, judged.fresh, load.flags};
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, CheckLoaded(rules, judged.loaded),
                                    "after the load under the new layout");
}

}  // namespace ckptspec
