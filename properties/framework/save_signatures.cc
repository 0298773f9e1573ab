// P4, P5 and P11's framework forms: the framework trains and saves (one or two modules), and what
// every rank handed its checkpointer (the save's signature, docs/SIGNATURE.md) has exactly one
// main replica per element and object shard (P4), never two pieces of state under one key (P5),
// and the same common state on every rank (P11) -- model/validate.h's checks.
#include "generators/framework_job_gen.h"
#include "model/validate.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {
namespace {

using Validator = std::vector<Violation> (*)(const GlobalSignature&);

void CheckSaveSignature(const TargetFactory& factory, Validator validate, const char* what) {
  const FrameworkJob job =
      *gen::JobWithin(SupportOf(factory), factory.capabilities.plan_cache, kFrameworkMaxWorld);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  RC_LOG() << "scenario:\n  " << DescribeJob(job) << "\n  train " << k << ", save; check " << what
           << " on every rank's signature\n";
  RC_TAG(job.modules.size() > 1 ? "heterogeneous" : "one module");

  FrameworkPair pair(factory, TargetOptions());
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(job));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(k));
  FrameworkSaveResult saved;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Save(false, &saved));
  if (!saved.signature) RC_FAIL("the framework declared signatures and reported none");
  const std::vector<Violation> violations = validate(*saved.signature);
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(
      pair, violations.empty() ? std::string() : FormatViolations(violations),
      std::string("the save's signature breaks ") + what);
}

}  // namespace

void CheckFrameworkShardingIntegrity(const TargetFactory& factory) {
  CheckSaveSignature(factory, CheckShardingIntegrity, "sharding integrity");
}

void CheckFrameworkKeyInjectivity(const TargetFactory& factory) {
  CheckSaveSignature(factory, CheckKeyInjectivity, "key injectivity");
}

void CheckFrameworkCommonState(const TargetFactory& factory) {
  CheckSaveSignature(factory, CheckCommonState, "common-state invariance");
}

}  // namespace ckptspec
