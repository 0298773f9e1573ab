#include "properties/framework/framework_util.h"

namespace ckptspec {

std::string FrameworkAlways(const TargetFactory&) { return ""; }

std::string FrameworkNeedsResharding(const TargetFactory& factory) {
  return factory.capabilities.resharding ? "" : "the framework does not load under another layout";
}

std::string FrameworkNeedsSignatures(const TargetFactory& factory) {
  return SupportOf(factory).signatures ? "" : "the framework does not report its saves' signatures";
}

std::string FrameworkNeedsPlanCache(const TargetFactory& factory) {
  return factory.capabilities.plan_cache
             ? ""
             : "the framework does not reuse save plans (capabilities.plan_cache)";
}

std::string FrameworkNeedsRerunFaults(const TargetFactory& factory) {
  return HasRerunFaults(SupportOf(factory)) ? ""
                                            : "the framework has no validate_results rerun mode";
}

}  // namespace ckptspec

namespace ckptspec {

Status SaveRestartLoad(FrameworkPair& pair, const FrameworkJob& job, const FrameworkLoad& load,
                       JudgedLoad* out) {
  CKPTSPEC_RETURN_IF_ERROR(pair.Save());
  CKPTSPEC_RETURN_IF_ERROR(pair.Observe(&out->saved));
  pair.NewProcess();
  CKPTSPEC_RETURN_IF_ERROR(pair.Build(job));
  CKPTSPEC_RETURN_IF_ERROR(pair.Observe(&out->fresh));
  CKPTSPEC_RETURN_IF_ERROR(pair.Load(load, &out->loaded_ok, &out->refusal));
  if (out->loaded_ok) CKPTSPEC_RETURN_IF_ERROR(pair.Observe(&out->loaded));
  return Status::OK();
}

JudgedLoad TrainSaveRestartLoad(FrameworkPair& pair, const FrameworkJob& saved_job, int64_t k,
                                const FrameworkJob& job, const FrameworkLoad& load) {
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Build(saved_job));
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, pair.Train(k));
  JudgedLoad judged;
  CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, SaveRestartLoad(pair, job, load, &judged));
  RC_CLASSIFY(!judged.loaded_ok, "refused by both");
  return judged;
}

void AssertLoaded(const FrameworkPair& pair, const LoadCase& rules, const Observation& loaded,
                  std::initializer_list<StateClass> classes, const char* when) {
  for (StateClass c : classes) {
    CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, CheckLoadedClass(rules, loaded, c), when);
  }
}

}  // namespace ckptspec
