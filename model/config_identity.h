// Identical(a, b): whether two run inputs (layouts, training and sharding configs) are the same
// value, member for member, floating-point members bit for bit (so 0.0 and -0.0 differ, and a NaN
// is identical to the same NaN). This is the test a cache of results computed from these inputs
// uses (StatePlan's shared plans): identical inputs give identical results.
//
// Every function names every member of its type; each asserts its type's member count
// (model/field_count.h), so a member added to one of these structs fails the build until it is
// compared here.
#pragma once

#include <vector>

#include "model/layout.h"
#include "model/state_sharding.h"
#include "model/training_state.h"

namespace ckptspec {

bool Identical(const Layout& a, const Layout& b);
bool Identical(const HeterogeneousLayout& a, const HeterogeneousLayout& b);
bool Identical(const ModelConfig& a, const ModelConfig& b);
bool Identical(const GroupingConfig& a, const GroupingConfig& b);
bool Identical(const OptimizerConfig& a, const OptimizerConfig& b);
bool Identical(const SchedulerConfig& a, const SchedulerConfig& b);
bool Identical(const DataConfig& a, const DataConfig& b);
bool Identical(const TrainingConfig& a, const TrainingConfig& b);
bool Identical(const std::vector<TrainingConfig>& a, const std::vector<TrainingConfig>& b);
bool Identical(const ShardingConfig& a, const ShardingConfig& b);

}  // namespace ckptspec
