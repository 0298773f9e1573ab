// P5, key injectivity: distinct state never shares a key. Over generated runs (heterogeneous
// modules, MoE with EP and expert-TP, dense+expert chained optimizers, both optimizer formats,
// trained or not, in steady state or a rerun fault), the target's framework dicts, signed WITH
// content digests, pass CheckKeyInjectivity: entries of one key share one origin, no key is both a
// tensor and an object, main replicas of one chunk hold the same content, and every replica of a
// chunk holds what its main holds.
// Catches: B02 (two modules' optimizer objects under one key), B08 (per-expert entries without the
// expert axis: different experts' content at one offset of one key).
#include <vector>

#include "generators/run_gen.h"
#include "model/validate.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/run_faults.h"

namespace ckptspec {

void CheckSaveKeyInjectivity(const TargetFactory& factory) {
  RunSpec run = *gen::RunUpTo(16);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  const bool fault = *rc::gen::inRange(0, 4) == 0;
  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(TrainedStates(&run, k, fault, &states));
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << states.front().iteration
           << (fault ? ", drive the rerun machine to WILL_RERUN_FROM_CHECKPOINT" : "")
           << ", take every rank's dict from the framework, sign it with content digests and"
              " check that no key holds distinct state\n";
  const RunShape shape = ShapeOf(run);
  RC_CLASSIFY(shape.heterogeneous, "heterogeneous");
  RC_CLASSIFY(shape.moe, "moe");
  RC_CLASSIFY(shape.ep, "ep>1");
  RC_CLASSIFY(shape.expert_tp, "expert-tp != tp");
  RC_CLASSIFY(shape.chained, "chained optimizer");
  RC_CLASSIFY(shape.dp_reshardable, "dp_reshardable");
  RC_CLASSIFY(fault, "rerun fault");

  auto under_test = factory.make(TargetOptions());
  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RC_ASSERT_OK(
      under_test->target().framework().ToStateDicts(run.layout, states, run.sharding, &dicts));
  const std::vector<Violation> violations = CheckKeyInjectivity(RunSignature(dicts, true));
  if (!violations.empty()) RC_FAIL("distinct state shares a key:\n" + FormatViolations(violations));
}

}  // namespace ckptspec
