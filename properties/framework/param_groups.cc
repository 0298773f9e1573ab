// P8's framework form, param-group identity: with per-parameter overrides (lr_mult, LR bounds,
// decoupled LR, where the framework has them) the framework's groups carry every identity field
// of the key (param_groups.h) -- a group without one cannot be matched on a resume, so a save of
// it must not succeed silently (B01) -- and a resume with the optimizer loaded gives every
// parameter its saved group's identity, bounds, betas, eps and step, and its optimizer state
// (model/observation_rules.h: groups, optimizer). Groups that differ only in their declared
// bounds stay apart (B21).
#include "generators/framework_job_gen.h"
#include "model/describe.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkParamGroups(const TargetFactory& factory) {
  const FrameworkSupport& s = SupportOf(factory);
  FrameworkJob job = *gen::JobWithin(s, factory.capabilities.plan_cache, kFrameworkMaxWorld);
  GroupingConfig& g = job.optimizer.grouping;
  // Overrides more often than the job generator draws them: they are what makes groups.
  if (s.Has(s.optimizer, "lr_mult") && g.lr_mult_overrides.empty() && *rc::gen::arbitrary<bool>()) {
    g.lr_mult_overrides.push_back({"output_layer", 2.0});
  }
  if (s.Has(s.optimizer, "lr_bounds") && g.lr_bound_overrides.empty() &&
      *rc::gen::arbitrary<bool>()) {
    g.lr_bound_overrides.push_back({"linear_fc1", job.scheduler.max_lr * 3, std::nullopt});
  }
  const int64_t k = *rc::gen::inRange<int64_t>(1, 3);
  FrameworkLoad load;
  load.flags.no_load_rng = s.Has(s.load_flags, "no_load_rng") && gen::OneIn(4);
  RC_LOG() << "scenario:\n  " << DescribeJob(job) << "\n  train " << k
           << ", check the groups' identity fields, save, restart, resume with the optimizer\n";
  RC_CLASSIFY(!g.lr_mult_overrides.empty(), "lr_mult override");
  RC_CLASSIFY(!g.lr_bound_overrides.empty(), "LR-bound override");
  RC_CLASSIFY(g.decoupled_lr.has_value(), "decoupled LR");

  FrameworkPair pair(factory, TargetOptions());
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(job));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(k));
  Observation trained;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Observe(&trained));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, MissingIdentityField(trained),
                                    "a param group lacks an identity field (no resume with the "
                                    "optimizer can match it)");
  JudgedLoad judged;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, SaveRestartLoad(pair, job, load, &judged));
  if (!judged.loaded_ok) RC_FAIL("the spec refuses the resume: " + judged.refusal);
  const LoadCase rules{job, judged.saved, job, judged.fresh, load.flags};
  AssertLoaded(pair, rules, judged.loaded, {StateClass::kGroups, StateClass::kOptimizer},
               "after the resume");
}

}  // namespace ckptspec
