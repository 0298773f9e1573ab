#include "generators/world_cap.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "generators/run_gen.h"

namespace ckptspec::gen {
namespace {

int64_t WorldOf(const RunSpec& run) { return run.layout.world_size(); }

// Runs drawn under a cap stay within it, whether single layouts or heterogeneous ones, and a
// resume relaid out under it too.
RC_GTEST_PROP(WorldCap, RunsAndResumesStayWithinTheCap, ()) {
  const int cap = *rc::gen::inRange(1, 9);
  const ScopedWorldCap scope(cap);
  const RunSpec run = *RunUpTo(16);
  RC_ASSERT(WorldOf(run) <= cap);
  const RunSpec resumed = *ResumeRunFor(run, 16, true);
  RC_ASSERT(WorldOf(resumed) <= cap);
  const DpDirection direction = *rc::gen::elementOf(
      std::vector<DpDirection>{DpDirection::kAny, DpDirection::kSmaller, DpDirection::kLarger});
  RC_ASSERT(WorldOf(*ResumeRunChangingOnlyDp(run, 16, direction)) <= cap);
}

TEST(WorldCap, ScopesNestAndANonPositiveCapIsNone) {
  EXPECT_EQ(CappedWorld(16), 16);
  {
    const ScopedWorldCap outer(4);
    EXPECT_EQ(CappedWorld(16), 4);
    EXPECT_EQ(CappedWorld(2), 2);
    {
      const ScopedWorldCap inner(0);
      EXPECT_EQ(CappedWorld(16), 16);
    }
    EXPECT_EQ(CappedWorld(16), 4);
  }
  EXPECT_EQ(CappedWorld(16), 16);
}

}  // namespace
}  // namespace ckptspec::gen
