// P7's framework form, plan-cache safety: under assume_constant_structure the framework saves
// steadily (its save plan cached), then -- where it has rerun faults -- after a persistent fault,
// whose fault save may hold state the steady saves did not; a new process loads the last save,
// and every state class is what the load rules say (model/observation_rules.h): a finished save
// holds every item its state dict had, or the save fails loudly.
#include "generators/framework_job_gen.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkPlanCacheSafety(const TargetFactory& factory) {
  const FrameworkSupport& s = SupportOf(factory);
  FrameworkJob job = *gen::JobWithin(s, true, kFrameworkMaxWorld);
  job.assume_constant_structure = true;
  const bool fault = HasRerunFaults(s) && !gen::OneIn(3);
  if (fault) job.rerun_mode = RerunMode::kValidateResults;
  const int64_t steady = *rc::gen::inRange<int64_t>(1, 3);
  RC_LOG() << "scenario:\n  " << DescribeJob(job) << "\n  " << steady
           << " x (train 1, save) with the plan cached"
           << (fault ? "; train 1, a persistent fault, the fault save" : "; train 1, save")
           << "; restart, load the last save\n";
  RC_TAG(fault ? "fault save after cached saves" : "cached steady saves");

  FrameworkPair pair(factory, TargetOptions());
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(job));
  for (int64_t i = 0; i < steady; ++i) {
    CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(1));
    CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Save());
  }
  // A step first: the fault save must not be the iteration a steady save wrote.
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(1, fault));
  JudgedLoad judged;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, SaveRestartLoad(pair, job, FrameworkLoad(), &judged));
  if (!judged.loaded_ok) RC_FAIL("the spec refuses the load: " + judged.refusal);
  const LoadCase rules{job, judged.saved, job, judged.fresh, LoadFlags()};
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, CheckLoaded(rules, judged.loaded),
                                    "after loading the last save");
}

}  // namespace ckptspec
