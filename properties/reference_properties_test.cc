// The property catalog instantiated for the reference target: every property must hold.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <string>
#include <vector>

#include "properties/property.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

const TargetFactory& Reference() {
  static const TargetFactory factory = ReferenceTargetFactory();
  return factory;
}

// Every property of the catalog (AllProperties: the one list of them), as RapidCheck checks it
// under RC_PARAMS, but P20: stateful_test.cc runs it on the reference, counting its commands.
class ReferenceProperty : public ::testing::TestWithParam<const Property*> {};

TEST_P(ReferenceProperty, Holds) {
  const Property& p = *GetParam();
  EXPECT_TRUE(rc::check(std::string(p.id) + " " + p.name, [&p] { p.check(Reference()); }))
      << p.id << " (" << p.name << ") failed on the reference: its counterexample is above";
}

std::vector<const Property*> EveryProperty() {
  std::vector<const Property*> out;
  for (const Property& p : AllProperties()) {
    if (std::string(p.id) != "P20") out.push_back(&p);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Catalog, ReferenceProperty, ::testing::ValuesIn(EveryProperty()),
                         [](const ::testing::TestParamInfo<const Property*>& info) {
                           return std::string(info.param->id);
                         });

// The reference declares every capability, so no property may be "not applicable" to it.
TEST(ReferenceTarget, EveryPropertyApplies) {
  for (const Property& p : AllProperties()) {
    EXPECT_EQ(p.not_applicable(Reference()), "") << p.id;
  }
}

}  // namespace
}  // namespace ckptspec
