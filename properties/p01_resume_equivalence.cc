// P1, resume equivalence: train k, save, resume (a new process, same layout, no flags), train m
// is bit for bit the state of training k + m without interruption.
// Catches: the bugs its entry in properties/catalog.cc names (docs/BUGS.md), among them state a
// process keeps that the checkpoint lacks, which only the new process shows (B29).
#include "generators/run_gen.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/scenarios.h"

namespace ckptspec {

void CheckResumeEquivalence(const TargetFactory& factory) {
  const RunSpec run = *gen::RunUpTo(16);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 4);
  const int64_t m = *rc::gen::inRange<int64_t>(1, 4);
  const bool async = factory.capabilities.async && *rc::gen::arbitrary<bool>();
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << k << ", save ("
           << (async ? "async" : "sync") << "), restart, resume on the same layout, train " << m
           << "; compare with training " << k + m << " uninterrupted\n";
  RC_TAG(run.configs.size() > 1 ? "heterogeneous" : "one module");
  RC_TAG(async ? "async save" : "sync save");

  CKPTSPEC_RC_ASSERT_OK(ResumeEquivalenceScenario(factory, run, k, m, async));
}

}  // namespace ckptspec
