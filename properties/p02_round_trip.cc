// P2, round-trip identity: every state class (parameters, fp32 main and offload copies, moments,
// step counters, param groups, scheduler, per-rank RNG, data iterator, rerun state machine,
// iteration) comes back unchanged from a save and a load under the same layout, in a new process.
// Catches: the bugs its entry in properties/catalog.cc names (docs/BUGS.md).
#include "generators/run_gen.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/scenarios.h"

namespace ckptspec {

void CheckRoundTripIdentity(const TargetFactory& factory) {
  const RunSpec run = *gen::RunUpTo(16);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 4);
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << k
           << ", save, load on the same layout, compare every state class\n";
  RC_TAG(OptimizerFormatName(run.sharding.optimizer_format));

  CKPTSPEC_RC_ASSERT_OK(RoundTripScenario(factory, run, k));
}

}  // namespace ckptspec
