// A training run as the specification sees it: a layout (one module, or several non-colocated
// ones), one training config per module, and the checkpoint sharding config; with the run-level
// helpers properties and tools share (initial states, training, the expected resume, comparison).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/layout.h"
#include "model/load_semantics.h"
#include "model/state_sharding.h"
#include "model/training_state.h"

namespace ckptspec {

struct RunSpec {
  HeterogeneousLayout layout;
  std::vector<TrainingConfig> configs;  // one per module, in layout.modules() order
  ShardingConfig sharding;
};

// Aligns a config with the layout it runs on: data.dp_size and the ranks' coordinates follow the
// layout; the global batch is kept, or rounded so that every DP rank gets whole micro-batches;
// per-DP-rank loaders get at least one sample per shard (num_samples raised to the DP size).
void FitConfigToLayout(const Layout& layout, TrainingConfig* config);

// Multi-line: per module its ranks, layout and config; then the optimizer format.
std::string DescribeRun(const RunSpec& run);

// The initial states of `run` (one per module).
Status InitialStates(const RunSpec& run, std::vector<TrainingState>* states);

// Trains every module n iterations.
Status TrainRun(std::vector<TrainingState>* states, int64_t n);

// The specification's expected states after resuming `run` under `flags` from `saved` (what a
// save of `saved_run` held): ExpectedStateAfterLoad per module. Errors are the load rules'. The
// same holds for a reload of that checkpoint in a live process of `run` and for a resume from a
// checkpoint imported from its consolidated export (docs/SEMANTICS.md §10).
Status ExpectedResume(const RunSpec& saved_run, const std::vector<TrainingState>& saved,
                      const RunSpec& run, const LoadFlags& flags, std::vector<TrainingState>* out);

// FirstDifference over modules ("module 'vision': ..."); empty when equal.
std::string FirstRunDifference(const std::vector<TrainingState>& a,
                               const std::vector<TrainingState>& b);

}  // namespace ckptspec
