// What the framework forms of the properties share (properties/framework/): the support of the
// target, the size of the jobs they draw, and failing a case with the story so far.
#pragma once

#include <algorithm>
#include <string>

#include <rapidcheck.h>

#include "model/framework_support.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_pair.h"
#include "targets/target_factory.h"

// Fails the RapidCheck case with the Status's message, after logging what the pair did.
#define CKPTSPEC_RC_ASSERT_FRAMEWORK_OK(pair, expr)        \
  do {                                                     \
    const ::ckptspec::Status ckptspec_rc_status_ = (expr); \
    if (!ckptspec_rc_status_.ok()) {                       \
      RC_LOG() << "operations:\n" << (pair).log();         \
      RC_FAIL(ckptspec_rc_status_.ToString());             \
    }                                                      \
  } while (0)

// Fails with `what` and the difference, after logging what the pair did, when it is not empty.
#define CKPTSPEC_RC_ASSERT_FRAMEWORK_SAME(pair, difference, what) \
  do {                                                            \
    const std::string ckptspec_rc_diff_ = (difference);           \
    if (!ckptspec_rc_diff_.empty()) {                             \
      RC_LOG() << "operations:\n" << (pair).log();                \
      RC_FAIL(std::string(what) + ": " + ckptspec_rc_diff_);      \
    }                                                             \
  } while (0)

namespace ckptspec {

// The most ranks a framework property's job has: rank processes of a real framework hold most of
// a GB each, and two cores run them.
inline constexpr int kFrameworkMaxWorld = 4;

inline const FrameworkSupport& SupportOf(const TargetFactory& factory) {
  return *factory.framework;
}

inline bool HasRerunFaults(const FrameworkSupport& s) {
  return std::find(s.rerun_modes.begin(), s.rerun_modes.end(), RerunMode::kValidateResults) !=
         s.rerun_modes.end();
}

// "" when the property's framework form applies to the factory's framework target.
std::string FrameworkAlways(const TargetFactory& factory);
std::string FrameworkNeedsResharding(const TargetFactory& factory);
std::string FrameworkNeedsSignatures(const TargetFactory& factory);
std::string FrameworkNeedsPlanCache(const TargetFactory& factory);
std::string FrameworkNeedsRerunFaults(const TargetFactory& factory);

}  // namespace ckptspec

namespace ckptspec {

// The four observations a load is judged on (model/observation_rules.h) and whether it happened.
struct JudgedLoad {
  Observation saved, fresh, loaded;
  bool loaded_ok = false;  // false: both the framework and the spec refused (refusal says why)
  std::string refusal;
};

// On `pair` (built with `saved_job`, trained and ready to save): saves, observes, restarts,
// builds `job`, observes, loads with `load` and, when it loaded, observes. Errors: the pair's.
Status SaveRestartLoad(FrameworkPair& pair, const FrameworkJob& job, const FrameworkLoad& load,
                       JudgedLoad* out);

// Inside a property: builds `saved_job` on `pair`, trains k, then SaveRestartLoad; fails the case
// on any error of the pair; classifies the case "refused by both" when neither side loaded.
JudgedLoad TrainSaveRestartLoad(FrameworkPair& pair, const FrameworkJob& saved_job, int64_t k,
                                const FrameworkJob& job, const FrameworkLoad& load);

// Inside a property: fails the case with the first class of `classes` whose loaded state is not
// what the load rules say (model/observation_rules.h), logging the operations.
void AssertLoaded(const FrameworkPair& pair, const LoadCase& rules, const Observation& loaded,
                  std::initializer_list<StateClass> classes, const char* when);

}  // namespace ckptspec
