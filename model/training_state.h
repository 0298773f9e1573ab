// The global (unsharded) training state of a run, its configuration, the initial state as a pure
// function of the config, and comparison with a readable first difference.
//
// Contents: for every ParameterSpec (ModelParameters order) the parameter in model dtype (raw
// element bits), the fp32 main copy (mixed precision only: model dtype != fp32), an optional
// CPU-offload fp32 copy (HybridDeviceOptimizer: its CPU sub-optimizer steps against this copy and
// then copies it back into the main and model parameters -- docs/BUGS.md B03's mechanism), Adam's
// exp_avg and exp_avg_sq (fp32), a per-parameter step counter; frozen parameters keep only the
// model copy. Then the optimizers (one, or dense + expert sub-optimizers of a ChainedOptimizer),
// each a list of param groups with their per-group step counters; the scheduler state; per-rank RNG
// streams; the data iterator; the rerun state machine; the iteration.
//
// Which step counter the optimizer uses (per parameter, as torch.optim.Adam; or per group) is
// configuration; the other one stays 0, so using the wrong one is observable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/data_iterator.h"
#include "model/model_config.h"
#include "model/param_groups.h"
#include "model/rerun_state_machine.h"
#include "model/rng_streams.h"
#include "model/scheduler.h"
#include "model/status.h"

namespace ckptspec {

enum class StepCounter { kPerParameter, kPerGroup };
enum class Chaining {
  kSingle,       // one optimizer holds every group
  kDenseExpert,  // ChainedOptimizer: "dense" (non-expert groups) then "expert" (expert groups)
};

struct OptimizerConfig {
  GroupingConfig grouping;
  StepCounter step_counter = StepCounter::kPerParameter;
  Chaining chaining = Chaining::kSingle;
  // HybridDeviceOptimizer: the parameters (in ModelParameters order, trainable only) whose
  // preceding trainable elements are fewer than fraction x (all trainable elements) are offloaded.
  double cpu_offload_fraction = 0.0;
};

struct TrainingConfig {
  ModelConfig model;
  uint64_t seed = 1;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  DataConfig data;
  std::vector<std::string> frozen;              // parameter names frozen from the start
  std::vector<RankCoords> ranks{RankCoords{}};  // the ranks whose RNG streams the state holds
  bool data_parallel_random_init = false;
  RerunMode rerun_mode = RerunMode::kValidateResults;
};

// Model config valid and with a floating model dtype of fp32, bf16 or fp16; scheduler and data
// configs valid; offload fraction in [0, 1]; frozen names exist; at least one rank. Named errors.
Status ValidateTrainingConfig(const TrainingConfig& c);

struct ParamState {
  std::vector<uint32_t> model;  // element bits in the model dtype (zero-extended)
  std::vector<float> main;      // fp32 main copy; empty when frozen or the model dtype is fp32
  std::vector<float> offload;   // the CPU sub-optimizer's fp32 copy; empty unless offloaded
  std::vector<float> exp_avg;   // empty when frozen
  std::vector<float> exp_avg_sq;
  int64_t step = 0;  // per-parameter step (StepCounter::kPerParameter)
  bool frozen = false;
  bool offloaded = false;
};

struct SubOptimizer {
  std::string name;  // "optimizer" (single), "dense", "expert"
  std::vector<ParamGroup> groups;
};

struct TrainingState {
  TrainingConfig config;
  std::vector<ParameterSpec> specs;  // ModelParameters(config.model)
  std::vector<ParamState> params;    // parallel to specs
  std::vector<SubOptimizer> optimizers;
  SchedulerState scheduler;
  std::vector<RankRngState> rng;  // parallel to config.ranks
  DataIteratorState data;
  RerunStateMachine rerun;
  int64_t iteration = 0;
};

// The initial state: a pure function of the config. Model weights are the content generator's
// values ContentElementBits(dtype, seed, KeyHash(name), i); main and offload copies equal them;
// moments are zero; groups are DefaultParamGroups with the scheduler applied at num_steps 0.
Status InitialTrainingState(const TrainingConfig& config, TrainingState* out);

// Index of the parameter called `name`, or -1.
int FindParameter(const TrainingState& s, const std::string& name);

// The value the optimizer steps from: the offload copy, else the main copy, else the model value.
double MasterValue(const TrainingState& s, int param, int64_t index);

// Freezes a trainable parameter (requires_grad = False): drops its optimizer state and removes it
// from its group (an emptied group is removed, an emptied sub-optimizer too). NotFound for an
// unknown name, FailedPrecondition when already frozen.
Status FreezeParameter(TrainingState* s, const std::string& name);

// Copies every trainable parameter's model value into its main and offload copies (Megatron's
// reload_model_params plus HybridDeviceOptimizer's update_fp32_param_by_new_param).
void RefreshMastersFromModel(TrainingState* s);

// Drops what a process restart loses (the rerun machine's in-memory snapshot, counters and
// first_iteration_complete): the state a resumed process starts from.
TrainingState Restarted(const TrainingState& s);

// The first difference between two states, in words ("exp_avg of decoder.layers.0.mlp.linear_fc1
// .weight at index 17: 0.25 (0x3e800000) vs 0.2500001 (0x3e800001)"); empty when equal. Floats
// compare by bits. Compares everything a checkpoint persists, not the rerun machine's in-memory
// fields or the config beyond the frozen set.
std::string FirstDifference(const TrainingState& a, const TrainingState& b);

}  // namespace ckptspec
