#include "properties/property.h"

namespace ckptspec {
namespace {

std::string Always(const TargetFactory&) { return ""; }

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
      {"P13", "crash consistency", "B19", NeedsFaultInjection, CheckCrashConsistency},
      {"P14", "async isolation", "B09 B19", NeedsAsyncAndFaultInjection, CheckAsyncIsolation},
      {"P15", "strict handling", "B20", NeedsStrictModes, CheckStrictHandling},
      {"P16", "corruption", "B20", NeedsFaultInjection, CheckCorruption},
      {"P17", "determinism", "", NeedsDeterminismAndFaultInjection, CheckDeterminism},
      {"P18", "backward compatibility", "B01 B20", NeedsFaultInjection, CheckBackwardCompatibility},
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
