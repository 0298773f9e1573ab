// P6's framework form, constant structure: the saves of one job -- steady ones at later
// iterations and, where the framework has rerun faults, the fault save -- hand the checkpointer
// the same structure (keys, shapes, chunks, dtypes, replica ids: model/validate.h's
// DiffStructure), as the first one did. A structure that changes between saves is what a cached
// save plan silently drops (P7).
#include "generators/framework_job_gen.h"
#include "model/validate.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkConstantStructure(const TargetFactory& factory) {
  const FrameworkSupport& s = SupportOf(factory);
  FrameworkJob job = *gen::JobWithin(s, factory.capabilities.plan_cache, kFrameworkMaxWorld);
  const bool fault = HasRerunFaults(s) && *rc::gen::arbitrary<bool>();
  if (fault) job.rerun_mode = RerunMode::kValidateResults;
  // The first save after a step: a framework whose optimizer creates its state at the first step
  // changes structure there, which the storage adapters' P6/P7 already report.
  const int64_t k = *rc::gen::inRange<int64_t>(1, 3);
  RC_LOG() << "scenario:\n  " << DescribeJob(job) << "\n  train " << k << ", save; train 1"
           << (fault ? ", a persistent fault, the fault save" : ", save")
           << "; every save's structure against the first's\n";
  RC_TAG(fault ? "fault save" : "steady saves");

  FrameworkPair pair(factory, TargetOptions());
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(job));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(k));
  FrameworkSaveResult first, later;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Save(false, &first));
  if (!first.signature) RC_FAIL("the framework declared signatures and reported none");
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(1, fault));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Save(false, &later));
  if (!later.signature) RC_FAIL("the framework declared signatures and reported none");
  const StructureDiff diff = DiffStructure(*first.signature, *later.signature);
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(
      pair, diff.empty() ? std::string() : FormatViolations(diff.ToViolations()),
      std::string("the ") + (fault ? "fault save's" : "second save's") +
          " structure differs from the first save's");
}

}  // namespace ckptspec
