#include "generators/layout_gen.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <climits>
#include <cstdlib>

#include "generators/run_gen.h"
#include "model/param_sharding.h"

namespace ckptspec {
namespace {

RC_GTEST_PROP(LayoutGen, LayoutsAndModelsAreValid, ()) {
  const LayoutAndModel lm = *gen::LayoutAndModelUpTo(128);
  RC_CLASSIFY(lm.layout.world_size() == 1, "world 1");
  RC_CLASSIFY(lm.layout.world_size() > 1 && lm.layout.world_size() <= 8, "world 2-8");
  RC_CLASSIFY(lm.layout.world_size() > 8 && lm.layout.world_size() < 64, "world 9-63");
  RC_CLASSIFY(lm.layout.world_size() >= 64, "world >= 64");
  RC_CLASSIFY(lm.layout.ep() > 1, "ep > 1");
  RC_CLASSIFY(lm.layout.etp() != lm.layout.tp(), "etp != tp");
  RC_CLASSIFY(lm.layout.cp() > 1, "cp > 1");
  RC_CLASSIFY(lm.model.pipeline_split.first_stage_layers >= 0, "uneven pipeline");
  RC_CLASSIFY(!(lm.layout.order() == RankOrder()), "non-default order");
  const Status s = ValidateModelForLayout(lm.model, lm.layout);
  RC_ASSERT(s.ok());
  ParameterSharding sharding;
  RC_ASSERT(ParameterSharding::Make(lm.layout, lm.model, &sharding).ok());
}

RC_GTEST_PROP(LayoutGen, LayoutForFitsTheModel, ()) {
  const LayoutAndModel lm = *gen::LayoutAndModelUpTo(32);
  const Layout other = *gen::LayoutFor(lm.model, 32);
  RC_CLASSIFY(!(other.tp() == lm.layout.tp() && other.pp() == lm.layout.pp() &&
                other.dp() == lm.layout.dp()),
              "layout changed");
  RC_ASSERT(ValidateModelForLayout(lm.model, other).ok());
}

RC_GTEST_PROP(LayoutGen, HeterogeneousModulesAreValid, ()) {
  const HeterogeneousCase h = *gen::Heterogeneous(8);
  ParameterSharding sharding;
  RC_ASSERT(ParameterSharding::Make(h.layout, h.models, &sharding).ok());
}

// Every invalid case is refused with an error that names the rule.
RC_GTEST_PROP(LayoutGen, InvalidLayoutsAreRefusedByName, ()) {
  const InvalidLayoutCase c = *gen::InvalidLayout();
  RankOrder order;
  Status s = RankOrder::Parse(c.order, &order);
  Layout layout;
  if (s.ok()) s = Layout::Make(c.world, c.sizes, order, &layout);
  RC_ASSERT(!s.ok());
  RC_ASSERT(s.message().find(c.expected_error) != std::string::npos);
}

// A reproduce string can hand a generator any 32-bit size; RapidCheck's inRange, given a negative
// one, returns values outside its range, which the layout generator used as an index. Every size
// generates valid cases. Run in a child process: an out-of-bounds read there fails this test
// instead of ending the test binary.
TEST(LayoutGen, EverySizeGeneratesValidCases) {
  EXPECT_EXIT(
      {
        for (int size : {INT_MIN, -100, -1, 0, 1, 100, 1000, INT_MAX}) {
          for (uint64_t seed = 0; seed < 40; ++seed) {
            const rc::Random random(seed);
            const LayoutAndModel lm = gen::LayoutAndModelUpTo(64)(random, size).value();
            if (!ValidateModelForLayout(lm.model, lm.layout).ok()) std::_Exit(10);
            const Layout other = gen::LayoutFor(lm.model, 32)(random, size).value();
            if (!ValidateModelForLayout(lm.model, other).ok()) std::_Exit(11);
            const HeterogeneousCase h = gen::Heterogeneous(8)(random, size).value();
            ParameterSharding sharding;
            if (!ParameterSharding::Make(h.layout, h.models, &sharding).ok()) std::_Exit(12);
            const InvalidLayoutCase c = gen::InvalidLayout()(random, size).value();
            if (c.expected_error.empty()) std::_Exit(13);
            const RunSpec run = gen::RunUpTo(8)(random, size).value();
            if (run.configs.empty()) std::_Exit(14);
          }
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ckptspec
