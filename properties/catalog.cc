#include "properties/property.h"

#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {
namespace {

std::string Always(const TargetFactory&) { return ""; }

std::string NeedsResharding(const TargetFactory& f) {
  return f.capabilities.resharding ? "" : "the target does not load under another layout";
}

std::string NeedsObjects(const TargetFactory& f) {
  return f.capabilities.objects ? ""
                                : "the target does not store ShardedObjects (RNG, rerun state)";
}

std::string NeedsFaultInjection(const TargetFactory& factory) {
  return factory.fault_injection
             ? ""
             : "its storage is no MemEnv (fault_injection): no faults, no copies";
}

// The in-memory faults, or crash states and storage faults on the real disk through the storage
// recorder (crash/fs_recorder.h).
std::string NeedsFaultInjectionOrDiskFaults(const TargetFactory& factory) {
  if (factory.fault_injection || factory.disk_faults) return "";
  std::string why = "its storage is no MemEnv (fault_injection) and no recorded disk (disk_faults)";
  if (!factory.disk_faults_missing.empty()) why += ": " + factory.disk_faults_missing;
  return why;
}

// On a MemEnv: async saves (isolation and async errors); on a recorded disk: storage faults of a
// sync or async save.
std::string NeedsAsyncAndFaultInjectionOrDiskFaults(const TargetFactory& factory) {
  if (factory.disk_faults) return "";
  if (!factory.capabilities.async) return "no async saves (capabilities.async)";
  return NeedsFaultInjectionOrDiskFaults(factory);
}

std::string NeedsDeterminismAndFaultInjection(const TargetFactory& factory) {
  if (!factory.capabilities.deterministic)
    return "does not claim byte-identical saves (capabilities.deterministic)";
  return NeedsFaultInjection(factory);
}

std::string NeedsStrictModes(const TargetFactory& factory) {
  return factory.capabilities.strict_modes ? ""
                                           : "not every StrictMode (capabilities.strict_modes)";
}

}  // namespace

const std::vector<Property>& AllProperties() {
  static const std::vector<Property> kCatalog = {
      {"P1", "resume equivalence",
       "resume equivalence: train k, save, resume in a new process, train m == train k+m, bit "
       "for bit",
       "B06 B10 B11 B15 B16 B17 B18 B29", Always, CheckResumeEquivalence, FrameworkAlways,
       CheckFrameworkResumeEquivalence},
      {"P2", "round-trip identity",
       "round-trip identity of every state class under the same layout (dtype included), loaded "
       "in a new process",
       "B07 B11 B13 B14 B29", Always, CheckRoundTripIdentity, FrameworkAlways,
       CheckFrameworkRoundTrip},
      {"P3", "resharding equivalence",
       "resharding equivalence: save under L1, load under L2 (and another params or moment "
       "dtype) gives the same global state, or the named error of the flag table; so does a "
       "load from its consolidated export",
       "B02 B07 B08 B31 B32", NeedsResharding, CheckReshardingEquivalence, FrameworkNeedsResharding,
       CheckFrameworkResharding},
      {"P4", "sharding integrity",
       "sharding integrity: exactly one main replica per element and object key; object counts "
       "match their global shape (a rank-local object: at most one per rank); ranks agree on "
       "dtype and global shape",
       "B02 B08", Always, CheckSaveShardingIntegrity, FrameworkNeedsSignatures,
       CheckFrameworkShardingIntegrity},
      {"P5", "key injectivity",
       "key injectivity: distinct state never shares a key (modules, sub-optimizers, experts, "
       "layers)",
       "B02 B08", Always, CheckSaveKeyInjectivity, FrameworkNeedsSignatures,
       CheckFrameworkKeyInjectivity},
      {"P6", "constant structure",
       "constant structure: (key, global shape, offset, dtype, replica id) depends on layout and "
       "config only (and, under torch.optim freezing, on which parameters have been stepped); "
       "sentinel and fault saves are identical in structure",
       "B04", Always, CheckConstantStructure, FrameworkNeedsSignatures,
       CheckFrameworkConstantStructure},
      {"P7", "plan-cache safety",
       "plan-cache safety: a changed structure re-plans or fails loudly; a finished save holds "
       "every main item",
       "B04 B09", PlanCacheNotApplicable, CheckPlanCacheSafety, FrameworkNeedsPlanCache,
       CheckFrameworkPlanCacheSafety},
      {"P8", "param-group identity",
       "param-group identity: state attaches by identity (declared LR bounds included); order "
       "does not matter; colliding or missing identity is an error",
       "B01 B05 B21", Always, CheckParamGroupIdentity, FrameworkAlways, CheckFrameworkParamGroups},
      {"P9", "copy coherence",
       "copy coherence: after any load model, fp32-main and offload copies agree; the next step "
       "starts from the loaded weights",
       "B03 B12", Always, CheckCopyCoherence, FrameworkAlways, CheckFrameworkCopyCoherence},
      {"P10", "scheduler and iteration semantics",
       "scheduler and iteration semantics per the flag table", "B05", Always,
       CheckSchedulerIteration, FrameworkAlways, CheckFrameworkScheduler},
      {"P11", "common-state invariance",
       "common state is identical on every rank; rank-variant data lives in sharded objects",
       "B02 B07", Always, CheckCommonStateInvariance, FrameworkNeedsSignatures,
       CheckFrameworkCommonState},
      {"P12", "per-rank state",
       "per-rank state (RNG, data iterator) returns to the rank that saved it; never deduplicated "
       "across distinct ranks; a layout change resets it explicitly or fails",
       "B10 B11 B16 B17 B25 B26 B27", NeedsObjects, CheckPerRankState, FrameworkAlways,
       CheckFrameworkPerRankState},
      {"P13", "crash consistency",
       "crash consistency: the tracker names a complete checkpoint that loads exactly; cleanup "
       "never removes the last complete one, nor one retention keeps while saves are in flight "
       "(on a recorded disk: the crash states of a save under the ordered and posix-weak "
       "models)",
       "B19 B30", NeedsFaultInjectionOrDiskFaults, CheckCrashConsistency, nullptr, nullptr,
       /*drawn_from_a_recording=*/true},
      {"P14", "async isolation",
       "async isolation: what training writes into the save input's buffers after an async save "
       "starts never reaches it; the tracker records the scheduled iteration; async errors "
       "surface, each at a call of its own (on a recorded disk: a failed write or fsync "
       "surfaces and the previous checkpoint still loads)",
       "B19 B28 B30", NeedsAsyncAndFaultInjectionOrDiskFaults, CheckAsyncIsolation, nullptr,
       nullptr,
       /*drawn_from_a_recording=*/true},
      {"P15", "strict handling", "strict handling of missing and unexpected keys per mode", "B20",
       NeedsStrictModes, CheckStrictHandling},
      {"P16", "corruption",
       "corruption gives a clear error naming the file, never wrong state, a crash or UB", "B20",
       NeedsFaultInjectionOrDiskFaults, CheckCorruption},
      {"P17", "determinism",
       "determinism: same seed and layout, byte-identical files (where the target claims it)", "",
       NeedsDeterminismAndFaultInjection, CheckDeterminism},
      {"P18", "backward compatibility",
       "backward compatibility: golden checkpoints of earlier format versions load", "B01 B20 B21",
       NeedsFaultInjection, CheckBackwardCompatibility},
      {"P19", "rerun state machine",
       "rerun state machine: transitions and exit codes per spec; a persisted state never needs "
       "unpersisted data",
       "B04 B06", NeedsObjects, CheckRerunStateMachine, FrameworkNeedsRerunFaults,
       CheckFrameworkRerun},
      {"P20", "stateful model",
       "stateful model: generated job operation sequences (train, save, finalize, rerun fault, "
       "crash, restart under other runs, freeze, unfreeze, heal from a peer, reload of an older "
       "checkpoint in the same process) agree with the spec after every operation",
       "B22 B23 B24 B31 B33", Always, CheckStatefulModel},
  };
  return kCatalog;
}

std::string NotApplicableReason(const Property& property, const TargetFactory& factory) {
  if (!factory.is_framework()) return property.not_applicable(factory);
  if (property.check_framework == nullptr) {
    return "no framework form: it needs what only a storage target offers (an in-memory Env, "
           "the engine's own interface, or the spec's training states)";
  }
  return property.framework_not_applicable(factory);
}

void RunBody(const Property& property, const TargetFactory& factory) {
  if (factory.is_framework()) {
    property.check_framework(factory);
  } else {
    property.check(factory);
  }
}

const Property* FindProperty(const std::string& id) {
  for (const Property& p : AllProperties()) {
    if (id == p.id) return &p;
  }
  return nullptr;
}

}  // namespace ckptspec
