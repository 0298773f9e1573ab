// The stateful model-based test on the reference target (stateful_commands.h): generated
// sequences of train / save / finalize / rerun fault / crash / restart / freeze commands, the spec
// as model. Failures print the initial run, the shrunk command list and the reproduce string.
//
// Budget: RapidCheck's defaults (100 cases, max_size 100); commands are scaled to about a quarter
// of the size, so a default run executes well over 1,000 commands (asserted below). RC_PARAMS
// overrides as usual, e.g. RC_PARAMS="max_success=1000" for a longer run.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "properties/stateful_commands.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

const TargetFactory& Reference() {
  static const TargetFactory factory = ReferenceTargetFactory();
  return factory;
}

TEST(Stateful, ReferenceTarget) {
  StatefulStats stats;
  rc::detail::checkGTest([&stats] { CheckStateful(Reference(), &stats); });
  std::cout << "stateful commands executed (all cases, shrinking included): " << stats.commands
            << "\n";
  for (const auto& [kind, count] : stats.by_kind)
    std::cout << "  " << kind << ": " << count << "\n";
  const int64_t commands = stats.commands;
  const rc::detail::TestParams& params = rc::detail::configuration().testParams;
  if (!HasFailure() && params.maxSuccess >= 100 && params.maxSize >= 100) {
    EXPECT_GE(commands, 1000) << "the default run must execute at least 1,000 commands";
  }
}

}  // namespace
}  // namespace ckptspec
