#include "generators/config_gen.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "generators/layout_gen.h"
#include "model/training_step.h"

namespace ckptspec {
namespace {

// Every generated config is valid, builds an initial state and trains a step.
RC_GTEST_PROP(ConfigGen, ConfigsAreValidAndTrain, ()) {
  const LayoutAndModel lm = *gen::LayoutAndModelUpTo(16);
  const TrainingConfig config = *gen::TrainingConfigFor(lm.layout, lm.model);
  RC_CLASSIFY(config.optimizer.chaining == Chaining::kDenseExpert, "chained");
  RC_CLASSIFY(config.optimizer.cpu_offload_fraction > 0, "cpu offload");
  RC_CLASSIFY(!config.frozen.empty(), "frozen parameters");
  RC_CLASSIFY(lm.model.params_dtype == DType::kBFloat16, "bf16");
  RC_ASSERT(ValidateTrainingConfig(config).ok());
  RC_ASSERT(static_cast<int64_t>(config.ranks.size()) == lm.layout.world_size());
  TrainingState state;
  RC_ASSERT(InitialTrainingState(config, &state).ok());
  RC_ASSERT(Train(&state, 1).ok());
}

RC_GTEST_PROP(ConfigGen, FlagsNeverConflictUnlessAllowed, ()) {
  const LoadFlags f = *gen::LoadFlagsGen(false);
  RC_ASSERT(!(f.override_scheduler && f.use_checkpoint_scheduler));
}

}  // namespace
}  // namespace ckptspec
