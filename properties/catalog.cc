#include "properties/property.h"

namespace ckptspec {
namespace {

std::string Always(const TargetFactory&) { return ""; }

std::string NeedsResharding(const TargetFactory& f) {
  return f.capabilities.resharding ? "" : "the target does not load under another layout";
}

std::string NeedsObjects(const TargetFactory& f) {
  return f.capabilities.objects ? "" : "the target does not store ShardedObjects (RNG, rerun state)";
}

std::string NeedsFaultInjection(const TargetFactory& factory) {
  return factory.fault_injection ? "" : "its storage is no MemEnv (fault_injection): no faults, no copies";
}

std::string NeedsAsyncAndFaultInjection(const TargetFactory& factory) {
  if (!factory.capabilities.async) return "no async saves (capabilities.async)";
  return NeedsFaultInjection(factory);
}

std::string NeedsDeterminismAndFaultInjection(const TargetFactory& factory) {
  if (!factory.capabilities.deterministic) return "does not claim byte-identical saves (capabilities.deterministic)";
  return NeedsFaultInjection(factory);
}

std::string NeedsStrictModes(const TargetFactory& factory) {
  return factory.capabilities.strict_modes ? "" : "not every StrictMode (capabilities.strict_modes)";
}

}  // namespace

const std::vector<Property>& AllProperties() {
  static const std::vector<Property> kCatalog = {
      {"P1", "resume equivalence", "B06 B10 B11 B15 B16 B17 B18", Always, CheckResumeEquivalence},
      {"P2", "round-trip identity", "B07 B11 B13 B14", Always, CheckRoundTripIdentity},
      {"P3", "resharding equivalence", "B02 B07 B08", NeedsResharding, CheckReshardingEquivalence},
      {"P4", "sharding integrity", "B02 B08", Always, CheckSaveShardingIntegrity},
      {"P5", "key injectivity", "B02 B08", Always, CheckSaveKeyInjectivity},
      {"P6", "constant structure", "B04", Always, CheckConstantStructure},
      {"P7", "plan-cache safety", "B04 B09", PlanCacheNotApplicable, CheckPlanCacheSafety},
      {"P8", "param-group identity", "B01 B05", Always, CheckParamGroupIdentity},
      {"P9", "copy coherence", "B03 B12", Always, CheckCopyCoherence},
      {"P10", "scheduler and iteration semantics", "B05", Always, CheckSchedulerIteration},
      {"P11", "common-state invariance", "B02 B07", Always, CheckCommonStateInvariance},
      {"P12", "per-rank state", "B10 B11 B16 B17", NeedsObjects, CheckPerRankState},
      {"P13", "crash consistency", "B19", NeedsFaultInjection, CheckCrashConsistency},
      {"P14", "async isolation", "B09 B19", NeedsAsyncAndFaultInjection, CheckAsyncIsolation},
      {"P15", "strict handling", "B20", NeedsStrictModes, CheckStrictHandling},
      {"P16", "corruption", "B20", NeedsFaultInjection, CheckCorruption},
      {"P17", "determinism", "", NeedsDeterminismAndFaultInjection, CheckDeterminism},
      {"P18", "backward compatibility", "B01 B20", NeedsFaultInjection, CheckBackwardCompatibility},
      {"P19", "rerun state machine", "B04 B06", NeedsObjects, CheckRerunStateMachine},
  };
  return kCatalog;
}

const Property* FindProperty(const std::string& id) {
  for (const Property& p : AllProperties()) {
    if (id == p.id) return &p;
  }
  return nullptr;
}

}  // namespace ckptspec
