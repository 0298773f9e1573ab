// P2's framework form, round-trip identity: the framework trains k and saves; a new process on
// the same layout builds the same job and loads with no flags; every state class is the saved one
// (model/observation_rules.h with no flags: everything from the checkpoint).
#include "generators/framework_job_gen.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkRoundTrip(const TargetFactory& factory) {
  const FrameworkJob job =
      *gen::JobWithin(SupportOf(factory), factory.capabilities.plan_cache, kFrameworkMaxWorld);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 4);
  RC_LOG() << "scenario:\n  " << DescribeJob(job) << "\n  train " << k
           << ", save, restart, load on the same layout with no flags\n";
  RC_TAG(OptimizerFormatName(job.optimizer.format));
  RC_TAG(job.optimizer.distributed ? "distributed optimizer" : "plain optimizer");

  FrameworkPair pair(factory, TargetOptions());
  const JudgedLoad judged = TrainSaveRestartLoad(pair, job, k, job, FrameworkLoad());
  if (!judged.loaded_ok) RC_FAIL("the spec refuses a plain load: " + judged.refusal);
  const LoadCase rules{job, judged.saved, job, judged.fresh, LoadFlags()};
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, CheckLoaded(rules, judged.loaded),
                                    "after the load, against the saved state");
}

}  // namespace ckptspec
