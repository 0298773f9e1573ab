// Generators of training configurations and load flags for a layout and model (docs/DESIGN.md §8).
//
// Contracts:
//  - TrainingConfigFor(layout, model) yields a config with ValidateTrainingConfig(...).ok() and
//    data.dp_size == layout.dp(), ranks == every rank's coordinates: the optimizer (step counter
//    per parameter or per group; single or dense+expert chained; CPU offload of none, some or all
//    parameters), param groups with and without lr_mult overrides and decoupled LR, frozen
//    parameters, every scheduler decay style with and without warmup and WD increments, data
//    order with and without shuffling, every rerun mode. Everything shrinks toward the plainest
//    choice (single optimizer, no offload, no frozen parameters, constant LR).
//  - LoadFlagsGen yields flag sets; override_scheduler and use_checkpoint_scheduler together
//    only when `allow_conflict`.
#pragma once

#include <ostream>
#include <string>

#include <rapidcheck.h>

#include "model/layout.h"
#include "model/load_semantics.h"
#include "model/training_state.h"

namespace ckptspec {
namespace gen {

rc::Gen<TrainingConfig> TrainingConfigFor(const Layout& layout, const ModelConfig& model);
rc::Gen<LoadFlags> LoadFlagsGen(bool allow_conflict);

}  // namespace gen

void showValue(const TrainingConfig& config, std::ostream& os);
void showValue(const LoadFlags& flags, std::ostream& os);
void showValue(LrDecayStyle style, std::ostream& os);
void showValue(IdentityField field, std::ostream& os);

}  // namespace ckptspec
