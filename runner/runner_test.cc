#include "runner/runner.h"

#include <gtest/gtest.h>

#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

// A framework that loses the iteration on load: what the runner must report as a failure.
class IterationLosingFramework : public CanonicalFramework {
 public:
  Status FromStateDicts(const LoadedCheckpoint& load,
                        std::vector<TrainingState>* states) const override {
    CKPTSPEC_RETURN_IF_ERROR(CanonicalFramework::FromStateDicts(load, states));
    for (TrainingState& s : *states) s.iteration = 0;
    return Status::OK();
  }
};

// The reference with that framework layer in place of its own.
TargetFactory BrokenFactory() {
  return ReplacedPartsTargetFactory("iteration-losing", [](int /*process*/) {
    ReplacedParts parts;
    parts.framework = std::make_unique<IterationLosingFramework>();
    return parts;
  });
}

TEST(Runner, ReferencePassesP2) {
  RunParams params;
  params.max_success = 20;
  const PropertyOutcome o = RunProperty(*FindProperty("P2"), ReferenceTargetFactory(), params);
  EXPECT_EQ(o.verdict, Verdict::kPass) << DescribeOutcome(o);
  EXPECT_EQ(o.cases, 20);
}

TEST(Runner, BrokenFrameworkFailsWithAReproducibleShrunkCase) {
  RunParams params;
  params.seed = 7;
  const PropertyOutcome o = RunProperty(*FindProperty("P2"), BrokenFactory(), params);
  ASSERT_EQ(o.verdict, Verdict::kFail) << DescribeOutcome(o);
  EXPECT_NE(o.message.find("iteration"), std::string::npos) << o.message;
  EXPECT_NE(o.reproduce.find("reproduce="), std::string::npos) << o.reproduce;
  EXPECT_FALSE(o.counterexample.empty());
  EXPECT_GT(o.shrunk_size, 0u);
  EXPECT_LE(o.time_to_failure_s, o.seconds);
  // Deterministic: the same seed finds and shrinks to the same case.
  const PropertyOutcome again = RunProperty(*FindProperty("P2"), BrokenFactory(), params);
  EXPECT_EQ(again.cases, o.cases);
  EXPECT_EQ(again.counterexample, o.counterexample);
}

// A known finding's failures are set aside: the property goes on, and a failure for another
// reason is still the property's.
TEST(Runner, KnownFindingsAreSteppedOverNotAbsorbed) {
  RunParams params;
  params.seed = 7;
  params.max_success = 20;
  params.known = {{"F99", "iteration"}};
  const PropertyOutcome stepped = RunProperty(*FindProperty("P2"), BrokenFactory(), params);
  EXPECT_NE(stepped.verdict, Verdict::kFail) << DescribeOutcome(stepped);
  ASSERT_EQ(stepped.known_hits.size(), 1u);
  EXPECT_EQ(stepped.known_hits[0].first, "F99");
  EXPECT_GT(stepped.known_hits[0].second, 0);
  params.known = {{"F99", "no such message"}};
  const PropertyOutcome failed = RunProperty(*FindProperty("P2"), BrokenFactory(), params);
  EXPECT_EQ(failed.verdict, Verdict::kFail) << DescribeOutcome(failed);
  EXPECT_TRUE(failed.known_hits.empty());
}

TEST(Runner, NotApplicableNeverRuns) {
  Property p = *FindProperty("P2");
  p.not_applicable = [](const TargetFactory&) { return std::string("needs a capability"); };
  p.check = [](const TargetFactory&) { FAIL() << "must not run"; };
  const PropertyOutcome o = RunProperty(p, ReferenceTargetFactory(), RunParams());
  EXPECT_EQ(o.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(o.message, "needs a capability");
}

}  // namespace
}  // namespace ckptspec
