// P19's framework form, the rerun state machine: in validate_results mode, after steady saves
// (the plan sometimes cached), an iteration hits a persistent fault; the framework's rerun machine
// asks for a checkpoint and exit exactly when the spec's does, the fault save completes, and a
// new process resumes from it with every state class -- the rerun machine's above all -- as the
// load rules say (model/observation_rules.h, L8).
#include "generators/framework_job_gen.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkRerun(const TargetFactory& factory) {
  FrameworkJob job =
      *gen::JobWithin(SupportOf(factory), factory.capabilities.plan_cache, kFrameworkMaxWorld);
  job.rerun_mode = RerunMode::kValidateResults;
  const int64_t steady = *rc::gen::inRange<int64_t>(0, 3);
  // At least one step after the last steady save (the fault save is another iteration) and in
  // this process (the rerun machine ignores faults before its first completed iteration).
  const int64_t before_fault = *rc::gen::inRange<int64_t>(1, 3);
  RC_LOG() << "scenario:\n  " << DescribeJob(job) << "\n  " << steady
           << " x (train 1, save); train " << before_fault
           << ", a persistent fault, the fault save; restart, load\n";
  RC_TAG(job.assume_constant_structure ? "plan cached" : "plan not cached");
  RC_CLASSIFY(steady > 0, "steady saves before the fault");

  FrameworkPair pair(factory, TargetOptions());
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(job));
  for (int64_t i = 0; i < steady; ++i) {
    CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(1));
    CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Save());
  }
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(before_fault, true));
  JudgedLoad judged;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, SaveRestartLoad(pair, job, FrameworkLoad(), &judged));
  if (!judged.loaded_ok) RC_FAIL("the spec refuses the load: " + judged.refusal);
  const LoadCase rules{job, judged.saved, job, judged.fresh, LoadFlags()};
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, CheckLoaded(rules, judged.loaded),
                                    "after loading the fault save");
}

}  // namespace ckptspec
