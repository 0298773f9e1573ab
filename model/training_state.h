// The global (unsharded) training state of a run, its configuration, the initial state as a pure
// function of the config, and comparison with a readable first difference.
//
// Contents: for every ParameterSpec (ModelParameters order) the parameter in model dtype (raw
// element bits), the fp32 main copy (mixed precision only: model dtype != fp32), an optional
// CPU-offload fp32 copy (HybridDeviceOptimizer: its CPU sub-optimizer steps against this copy and
// then copies it back into the main and model parameters -- docs/BUGS.md B03's mechanism), Adam's
// exp_avg and exp_avg_sq (fp32), a per-parameter step counter. Which parameters hold optimizer
// state (moments, step, main and offload copies) depends on the freezing family (FreezeFamily):
// under Megatron's every trainable one and no frozen one; under torch.optim's every parameter that
// has been stepped, frozen or not. Then the optimizers (one, or dense + expert sub-optimizers of a ChainedOptimizer),
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

// How freezing (requires_grad = False) and optimizer state interact; docs/SEMANTICS.md §5.
enum class FreezeFamily {
  // Megatron: the optimizer is built from the trainable parameters, each with its state from the
  // start; freezing takes a parameter out of its group and drops its state; a frozen parameter
  // never rejoins the optimizer.
  kMegatron,
  // torch.optim: every parameter stays in its group whatever requires_grad says; its state is
  // created at its first step (lazily: a parameter not stepped yet has none) and kept while it is
  // frozen, so a parameter trained, frozen and unfrozen resumes with its moments and step exactly.
  // Needs the per-parameter step counter and no CPU offload (validated), and the
  // fully_reshardable format (StatePlan::Make).
  kTorchOptim,
};
const char* FreezeFamilyName(FreezeFamily f);                        // "megatron" / "torch_optim"
bool ParseFreezeFamily(const std::string& name, FreezeFamily* out);  // false: no such name

struct OptimizerConfig {
  GroupingConfig grouping;
  FreezeFamily freeze_family = FreezeFamily::kMegatron;
  StepCounter step_counter = StepCounter::kPerParameter;
  Chaining chaining = Chaining::kSingle;
  // HybridDeviceOptimizer: the parameters (in ModelParameters order, trainable only) whose
  // preceding trainable elements are fewer than fraction x (all trainable elements) are offloaded.
  double cpu_offload_fraction = 0.0;
  // The dtype the optimizer keeps Adam's moments in: fp32, or bf16 (Megatron's
  // --use-precision-aware-optimizer with --exp-avg-dtype / --exp-avg-sq-dtype bf16). Each update
  // is computed in fp32 and its moments stored rounded to nearest even; the fp32 main copy stays
  // fp32. A checkpoint holds the moments as fp32 values whatever this is (Megatron saves the
  // precision-aware state unscaled, in fp32); a load rounds them into the run's (rule L3).
  DType moment_dtype = DType::kFloat32;
};

// How a run saves its RNG state (the state_sharding.h table; load rule L7).
enum class RngSaving {
  // Megatron's "rng_state" ShardedObject: sharded over (pp, tp[, dp_cp]), ranks that share their
  // RNG are replicas of one shard.
  kSharded,
  // Each rank's own RNG as a rank-local object (no sharding declared, IsRankLocal), as trainers
  // that hand torch.get_rng_state() to PyTorch DCP as a plain value save it; it loads back only
  // into the rank of the same global rank.
  kRankLocal,
};
const char* RngSavingName(RngSaving s);                        // "sharded" / "rank_local"
bool ParseRngSaving(const std::string& name, RngSaving* out);  // false: no such name

struct TrainingConfig {
  ModelConfig model;
  uint64_t seed = 1;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  DataConfig data;
  std::vector<std::string> frozen;              // parameter names frozen from the start
  std::vector<RankCoords> ranks{RankCoords{}};  // the ranks whose RNG streams the state holds
  bool data_parallel_random_init = false;
  RngSaving rng_saving = RngSaving::kSharded;
  RerunMode rerun_mode = RerunMode::kValidateResults;
};

// Model config valid and with a floating model dtype of fp32, bf16 or fp16; moments in fp32 or
// bf16; scheduler and data configs valid; offload fraction in [0, 1]; frozen names exist; at
// least one rank; the torch.optim freezing family with the per-parameter step counter and no
// offload. Named errors.
Status ValidateTrainingConfig(const TrainingConfig& c);

struct ParamState {
  std::vector<uint32_t> model;  // element bits in the model dtype (zero-extended)
  // The optimizer state: all of it empty when the parameter has none (HasOptimizerState).
  std::vector<float> main;     // fp32 main copy; also empty when the model dtype is fp32
  std::vector<float> offload;  // the CPU sub-optimizer's fp32 copy; empty unless offloaded
  std::vector<float> exp_avg;
  std::vector<float> exp_avg_sq;
  int64_t step = 0;  // per-parameter step (StepCounter::kPerParameter)
  bool frozen = false;
  bool offloaded = false;
};

// Whether the parameter has optimizer state (its moments are not empty; parameters are never
// empty).
inline bool HasOptimizerState(const ParamState& p) { return !p.exp_avg.empty(); }

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
// values ContentElementBits(dtype, seed, KeyHash(name), i). Megatron family: every trainable
// parameter has its optimizer state, main and offload copies equal to the model value, moments
// zero; groups are DefaultParamGroups of the trainable parameters. torch.optim family: no
// parameter has optimizer state yet; the groups hold every parameter. The scheduler is applied at
// num_steps 0.
Status InitialTrainingState(const TrainingConfig& config, TrainingState* out);

// Index of the parameter called `name`, or -1.
int FindParameter(const TrainingState& s, const std::string& name);

// The value the optimizer steps from: the offload copy, else the main copy, else the model value.
double MasterValue(const TrainingState& s, int param, int64_t index);

// Freezes a trainable parameter (requires_grad = False). Megatron family: drops its optimizer
// state and removes it from its group (an emptied group is removed, an emptied sub-optimizer too).
// torch.optim family: nothing else changes (its group and state stay). NotFound for an unknown
// name, FailedPrecondition when already frozen.
Status FreezeParameter(TrainingState* s, const std::string& name);

// Unfreezes a frozen parameter (requires_grad = True again). torch.optim family only: it trains
// on in its group from the state it kept (or, without state, gets it at its next step).
// FailedPrecondition under the Megatron family (the optimizer was built without it) or when the
// parameter is not frozen; NotFound for an unknown name.
Status UnfreezeParameter(TrainingState* s, const std::string& name);

// The fresh optimizer state a parameter gets at its first step under the torch.optim family:
// moments zero, step 0, the main copy (16-bit model) the model value. Precondition: it has none.
void CreateOptimizerState(TrainingState* s, int param);

// Whether the instances of each stacked checkpoint key (ParameterSpec::key) all have optimizer
// state or all have none (`present` parallel to `specs`): the canonical sharding saves a stacked
// key's state whole (state_sharding.h). Under the torch.optim family a key can be split, e.g. by
// a layer added since the others were stepped. NotSupported naming the first parameter that
// differs from its key's first instance.
Status CheckStackedKeysWhole(const std::vector<ParameterSpec>& specs,
                             const std::vector<bool>& present);
// The same for a state's parameters.
Status CheckStackedKeysWhole(const TrainingState& s);
// HasOptimizerState of each of the state's parameters, in order.
std::vector<bool> OptimizerStatePresence(const TrainingState& s);

// Copies the model value of every parameter with optimizer state into its main and offload copies (Megatron's
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
