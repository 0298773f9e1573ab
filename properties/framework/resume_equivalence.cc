// P1's framework form, resume equivalence: the framework trains k, saves, a new process resumes
// on the same layout and trains m; every rank's observation is bit for bit the one of a fresh
// process that trained k + m without interruption. A difference is reported with the first state
// the load rules find wrong right after the load, where there is one (the cause, most often: a
// wrong lr shows as different weights m steps later).
#include "generators/framework_job_gen.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkResumeEquivalence(const TargetFactory& factory) {
  const FrameworkJob job =
      *gen::JobWithin(SupportOf(factory), factory.capabilities.plan_cache, kFrameworkMaxWorld);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 4);
  const int64_t m = *rc::gen::inRange<int64_t>(1, 3);
  const bool async = factory.capabilities.async && *rc::gen::arbitrary<bool>();
  RC_LOG() << "scenario:\n  " << DescribeJob(job) << "\n  train " << k << ", save"
           << (async ? " (async)" : "") << ", restart, resume on the same layout, train " << m
           << "; compare with a new process training " << k + m << "\n";
  RC_TAG(job.modules.size() > 1 ? "heterogeneous" : "one module");
  RC_TAG(async ? "async save" : "sync save");

  FrameworkPair pair(factory, TargetOptions());
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(job));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(k));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Save(async));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Finalize());
  JudgedLoad judged;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Observe(&judged.saved));
  pair.NewProcess();
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(job));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Observe(&judged.fresh));
  bool loaded = false;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Load(FrameworkLoad(), &loaded));
  if (!loaded) RC_FAIL("the spec refuses a plain resume on the same layout");
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Observe(&judged.loaded));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(m));
  Observation resumed, uninterrupted;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Observe(&resumed));
  pair.NewProcess();
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(job));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(k + m));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Observe(&uninterrupted));
  std::string difference = FirstObservationDifference(resumed, uninterrupted);
  if (!difference.empty()) {
    const LoadCase rules{job, judged.saved, job, judged.fresh, LoadFlags()};
    const std::string cause = CheckLoaded(rules, judged.loaded);
    if (!cause.empty()) difference += "; right after the load: " + cause;
  }
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, difference, "resumed vs uninterrupted");
}

}  // namespace ckptspec
