// P11, common-state invariance: every rank's common state is the same tree, and everything that
// varies by rank lives in sharded objects. For a generated run (both optimizer formats, including
// dp_reshardable over several DP ranks whose bucket slices hold different numbers of parameters,
// heterogeneous modules, rerun faults) the target's framework dicts pass CheckCommonState; and the
// same run with every rank's RNG streams advanced by a different, rank-dependent amount and the
// data iterator moved on has, on every rank, exactly the common state of the unperturbed run
// (per-rank state never leaks into the common path).
// Catches: B02 (param_state_sharding_type per rank through the common path), B07 (per-rank list
// lengths in common state), RNG or data positions stored as common state.
#include <vector>

#include "generators/run_gen.h"
#include "model/validate.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/run_faults.h"

namespace ckptspec {

void CheckCommonStateInvariance(const TargetFactory& factory) {
  RunSpec run = *gen::RunUpTo(16);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  const bool fault = *rc::gen::inRange(0, 4) == 0;
  const uint64_t rng_shift = *rc::gen::inRange<uint64_t>(1, 5);
  const int64_t batches_on = *rc::gen::inRange<int64_t>(1, 4);
  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(TrainedStates(&run, k, fault, &states));
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << states.front().iteration
           << (fault ? ", drive the rerun machine to WILL_RERUN_FROM_CHECKPOINT" : "")
           << ", check every rank's common state; then advance rank r's RNG streams by "
           << rng_shift << " + r draws and the data iterator by " << batches_on
           << " global batches: the common state must not change\n";
  const RunShape shape = ShapeOf(run);
  RC_CLASSIFY(shape.heterogeneous, "heterogeneous");
  RC_CLASSIFY(shape.dp_reshardable && shape.dp, "dp_reshardable, dp>1");
  RC_CLASSIFY(shape.chained, "chained optimizer");
  RC_CLASSIFY(fault, "rerun fault");

  auto under_test = factory.make(TargetOptions());
  const FrameworkLayer& framework = under_test->target().framework();
  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RC_ASSERT_OK(framework.ToStateDicts(run.layout, states, run.sharding, &dicts));
  const GlobalSignature signature = RunSignature(dicts, false);
  const std::vector<Violation> violations = CheckCommonState(signature);
  if (!violations.empty())
    RC_FAIL("ranks disagree on the common state:\n" + FormatViolations(violations));

  std::vector<TrainingState> perturbed = states;
  for (TrainingState& s : perturbed) {
    for (size_t r = 0; r < s.rng.size(); ++r) AdvanceAll(&s.rng[r], rng_shift + r);
    for (int64_t b = 0; b < batches_on; ++b) AdvanceDataIterator(s.config.data, &s.data);
  }
  std::vector<ShardedStateDict> perturbed_dicts;
  CKPTSPEC_RC_ASSERT_OK(
      framework.ToStateDicts(run.layout, perturbed, run.sharding, &perturbed_dicts));
  // Rank 0 of the unperturbed save first: every perturbed rank must hold its exact tree.
  GlobalSignature both;
  both.ranks.push_back(signature.ranks.front());
  for (size_t r = 0; r < perturbed_dicts.size(); ++r) {
    RankSignature sig =
        SignatureOf(static_cast<int64_t>(perturbed_dicts.size() + r), perturbed_dicts[r]);
    both.ranks.push_back(std::move(sig));
  }
  const std::vector<Violation> leaked = CheckCommonState(both);
  if (!leaked.empty()) {
    RC_FAIL(
        "per-rank state reaches the common state (rank n + r below is rank r of the perturbed "
        "run):\n" +
        FormatViolations(leaked));
  }
}

}  // namespace ckptspec
