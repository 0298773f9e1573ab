// Every value a property generates prints in words in a shrunk counterexample: RapidCheck shows a
// type without a showValue as "<", three question marks, ">" (a generated break, change, fault, strict mode or golden
// scenario would then be lost from the report). Each property below is run against a catalog
// mutant it kills, so the counterexample holds every value the property drew.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "generators/config_gen.h"
#include "properties/golden.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "runner/runner.h"
#include "runner/target_registry.h"

namespace ckptspec {
namespace {

void ExpectCounterexampleInWords(const std::string& mutant, const std::string& property) {
  std::vector<TargetFactory> targets;
  ASSERT_TRUE(ResolveTargets(mutant, &targets).ok());
  ASSERT_EQ(targets.size(), 1u);
  RunParams params;
  params.max_success = 200;
  const PropertyOutcome o = RunProperty(*FindProperty(property), targets[0], params);
  ASSERT_EQ(o.verdict, Verdict::kFail) << DescribeOutcome(o);
  ASSERT_FALSE(o.counterexample.empty());
  for (const auto& [type, value] : o.counterexample) {
    EXPECT_EQ(value.find("<??"
                         "?>"),
              std::string::npos)
        << mutant << " " << property << ": " << type << " prints as " << value;
  }
}

TEST(CounterexamplePrint, ShardingBreakIsNamed) { ExpectCounterexampleInWords("B02", "P4"); }
TEST(CounterexamplePrint, StructureChangeIsNamed) { ExpectCounterexampleInWords("B09", "P7"); }
TEST(CounterexamplePrint, ParamGroupCaseIsNamed) { ExpectCounterexampleInWords("B01", "P8"); }
TEST(CounterexamplePrint, SchedulerChangeIsNamed) { ExpectCounterexampleInWords("B05", "P10"); }
TEST(CounterexamplePrint, AsyncFaultAndNextCallAreNamed) {
  ExpectCounterexampleInWords("B19", "P14");
}
TEST(CounterexamplePrint, GoldenScenarioIsNamed) { ExpectCounterexampleInWords("B20", "P18"); }

// Types no catalog mutant makes a property print (P15's strict mode; values of the model layer).
TEST(CounterexamplePrint, LowerLayerEnumsPrintTheirNames) {
  EXPECT_EQ(rc::toString(StrictMode::kRaiseUnexpected), "raise_unexpected");
  EXPECT_EQ(rc::toString(LrDecayStyle::kCosine), "cosine");
  EXPECT_EQ(rc::toString(IdentityField::kMaxLr), "max_lr");
  EXPECT_EQ(rc::toString(GoldenScenarios().front()), GoldenScenarios().front().name);
}

}  // namespace
}  // namespace ckptspec
