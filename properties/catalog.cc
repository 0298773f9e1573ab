#include "properties/property.h"

namespace ckptspec {
namespace {

std::string Always(const TargetFactory&) { return ""; }

}  // namespace

const std::vector<Property>& AllProperties() {
  static const std::vector<Property> kCatalog = {
      {"P1", "resume equivalence", "B06 B10 B11 B15 B16 B17 B18", Always, CheckResumeEquivalence},
      {"P2", "round-trip identity", "B07 B11 B13 B14", Always, CheckRoundTripIdentity},
      {"P4", "sharding integrity", "B02 B08", Always, CheckSaveShardingIntegrity},
      {"P5", "key injectivity", "B02 B08", Always, CheckSaveKeyInjectivity},
      {"P6", "constant structure", "B04", Always, CheckConstantStructure},
      {"P7", "plan-cache safety", "B04 B09", PlanCacheNotApplicable, CheckPlanCacheSafety},
      {"P11", "common-state invariance", "B02 B07", Always, CheckCommonStateInvariance},
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
