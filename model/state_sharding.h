// The canonical sharding of the WHOLE training state (the spec's framework layer, docs/DESIGN.md §4):
// training state -> each rank's ShardedStateDict, the templates a rank requests on load, and
// loaded dicts -> training state. Megatron-core's conventions (docs/SEMANTICS.md §2, §4, §5, §7) with
// the fixes of docs/BUGS.md B02, B04, B07, B08.
//
// A run is one TrainingState per module of a HeterogeneousLayout (a plain Layout is one unnamed
// module). Module m's state must have config.model.name == the module's name, config.data.dp_size
// == the module's DP size, and an RNG state for the coordinates of every rank of the module
// (RankCoordsOf). Named modules must agree on iteration and on the rerun machine's mode, state and
// iteration (one training loop).
//
// Entries of rank r (module prefix P = "{module}." and optimizer prefix O = "optimizer.mimo.{module}."
// for a named module, "" and "optimizer." for an unnamed one; M = the module name or "model"):
//
// | entry                    | key / shape                                   | replica id              | origin |
// |--------------------------|-----------------------------------------------|-------------------------|--------|
// | model parameters         | ParameterSharding (param_sharding.h); data from the state's model copies, each layer / expert instance one chunk of the stacked key | as there | M:param |
// | fully_reshardable moments| C+O+"state.{exp_avg,exp_avg_sq,fp32_param}.{model key}", fp32, the model chunk's box and grid; fp32_param only with a 16-bit model dtype; only for parameters with optimizer state | the model chunk's | M:optimizer.{state} |
// | per-parameter step       | C+O+"state.step.{model key}", int64, prepended axes + (1,); only for parameters with optimizer state | the model chunk's with the TP slot = (expert-)TP rank (the step is replicated over TP) | M:optimizer.step |
// | dp_reshardable buffers   | C+O+"distributed.dp_group_idx_{mp}.gbuf_idx_0.dtype_{dt}.bucket_idx_{b}.{param,exp_avg,exp_avg_sq}", 1-D fp32 of numel_unpadded, irregular grid, the rank's DP slice (optimizer_buffers.h); "param" only with a 16-bit model dtype | (0, 0, 0) | M:optimizer.{state} |
// | dp_reshardable slice index | object C+O+"distributed.dp_group_idx_{mp}.param_state", shape (dp,), offset (dp rank): the parameters and ranges of the rank's slices (rank-variant: B07) | (0, 0, 0) | M:optimizer.param_state |
// | RNG                      | object P+"rng_state": shape (pp, tp), offset (pp, tp) when every DP-CP rank of a (pp, tp) shares its RNG; else (ep > 1, expert-TP != TP, data_parallel_random_init, or a rank order that puts ranks of different expert coordinates in one DP-CP group; Megatron does so for ep > 1) shape (pp, tp, dp_cp), offset (pp, tp, dp_cp) | (dp_cp) / (0) | M:rng |
// | RNG, rng_saving rank_local | rank-local object P+"rng_state" (IsRankLocal: no shape, offset or replica id), the rank's own RNG | none | M:rng |
// | rerun state machine      | object "rerun_state_machine_state", shape (world,), offset (global rank): the full payload, sentinel in steady state (B04) | (0) | run:rerun_state_machine |
// | data iterator            | object P+"data_iterator", shape (dp,), offset (dp rank) | (pp, tp, cp) | M:data_iterator |
// | module optimizer common  | named modules only: object O+"common_state", shape (1,): {param groups, scheduler} (B02) | (pp, tp, dp_cp) | M:optimizer.common |
//
// C is "chained_{i}." for sub-optimizer i when there are several sub-optimizers and the format is
// not fully reshardable (or chained_avoid_prefix is false); dp group mp = the rank in the model-
// parallel group (tp + tp_size·pp; for the expert sub-optimizer etp + etp_size·(ep + ep_size·pp)).
// dp_reshardable shards dense parameters over the DP-CP group and expert parameters over the
// expert-DP group, so it needs Chaining::kDenseExpert when the model has experts (NotSupported
// otherwise, as Megatron always chains them).
//
// Common state (identical on every rank, P11): checkpoint_version, iteration, the layout of every
// module ("parallel_layout"), the dtype of each module's model weights ("params_dtype": one name
// per module; read by a load under another dtype, L1), when a module saves its RNG rank-local
// "rng_saving" (per module: "sharded" or "rank_local"; absent: every module sharded),
// param_state_sharding_type and the buffer config ("optimizer_sharding"),
// when a module follows the torch_optim freezing family "optimizer_state_params" (per module: null
// for the megatron family, else the ascending indices of the parameters with optimizer state, as
// the keys of torch's optimizer "state"; the megatron family's every grouped parameter has state),
// the rerun machine's mode / state / current_iteration ("rerun_state_machine"), and for an unnamed
// module "optimizer" = {sub-optimizers with their param groups (identity, hyper-parameters, step,
// parameter indices)} and "opt_param_scheduler". Nothing rank-variant.
//
// Deviation from Megatron, on purpose: per-parameter step counters are saved exactly (Megatron
// keeps one "common_step"); the fp32 master value is saved once (the load fills both the main and
// the offload copy from it, L3); the shared word embedding gets no bucket of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/layout.h"
#include "model/load_semantics.h"
#include "model/optimizer_buffers.h"
#include "model/sharded.h"
#include "model/status.h"
#include "model/training_state.h"

namespace ckptspec {

struct ShardingConfig {
  OptimizerFormat optimizer_format = OptimizerFormat::kFullyReshardable;
  BufferConfig buffers;  // dp_reshardable only
  // Megatron's chained_optim_avoid_prefix (training sets it): no "chained_{i}." prefix for the
  // fully reshardable format. False: the prefix whenever there are several sub-optimizers.
  bool chained_avoid_prefix = true;
};

// "fully_reshardable" / "dp_reshardable" (Megatron's param_state_sharding_type values).
const char* OptimizerFormatName(OptimizerFormat f);
bool ParseOptimizerFormat(const std::string& name, OptimizerFormat* out);  // false: no such name

// The coordinates of every rank of `layout`, in rank order: what TrainingConfig::ranks holds for
// a run under it.
std::vector<RankCoords> RankCoordsOf(const Layout& layout);

// Save: every rank's dict, in global rank order. Errors: inconsistent inputs (see above, named),
// an invalid model for its module layout, a rerun state that cannot be persisted (B06), dp_reshardable
// with unchained experts.
Status ShardTrainingState(const HeterogeneousLayout& layout,
                          const std::vector<TrainingState>& states, const ShardingConfig& sharding,
                          std::vector<ShardedStateDict>* out);
Status ShardTrainingState(const Layout& layout, const TrainingState& state,
                          const ShardingConfig& sharding, std::vector<ShardedStateDict>* out);

// What the load needs to know about a checkpoint before requesting anything (Megatron reads its
// common state first): the saving layout and sharding config.
struct CheckpointInfo {
  HeterogeneousLayout layout;
  ShardingConfig sharding;
  std::vector<bool> data_parallel_random_init;  // per module: how its rng_state is keyed
  std::vector<RngSaving> rng_saving;            // per module: sharded or rank-local RNG
  // Per module: the dtype its model weights were saved in (common "params_dtype": fp32, bf16 or
  // fp16); nullopt for a checkpoint written before the field, read as saved in the loading run's
  // dtype (the only one rule L1 then allowed).
  std::vector<std::optional<DType>> params_dtype;
  // Per module: nullopt for the megatron freezing family; for torch_optim the indices (ascending)
  // of the parameters that have optimizer state (common "optimizer_state_params").
  std::vector<std::optional<std::vector<int64_t>>> optimizer_state_params;
  // The common state these were read from, whole (a framework may read more of it).
  nlohmann::json common = nlohmann::json::object();
};
// Parses the common state written by ShardTrainingState. Corruption naming the field otherwise.
Status ReadCheckpointInfo(const nlohmann::json& common, CheckpointInfo* out);

// The dtype a load requests a module's model weights in (rule L1), from the dtype the checkpoint
// saved them in and the run's: the run's, so that the engine converts them as it fills the
// template (PyTorch DCP copies into a template of another dtype with a cast; docs/SEMANTICS.md
// §4); but an fp32 checkpoint's weights are its master values, and a 16-bit run whose optimizer
// state loads (`optimizer_loads`) needs them unrounded for its fp32 main copy: then fp32, and the
// load rules round them.
DType RequestedWeightDtype(DType saved, DType now, bool optimizer_loads);

// Load templates: what every rank of `layout` requests for a run with `configs` (one per module)
// from the checkpoint described by `saved`, under `flags`. Specs are the new layout's (resharding);
// tensor data is sized and zeroed, object data empty. Entries the load rules will not use are not
// requested: no optimizer entries (nor scheduler / module common) under finetune or
// no_load_optim, and under the torch_optim freezing family only those of the parameters the
// checkpoint records as having optimizer state; no rng_state under finetune, no_load_rng or a
// TP / PP change, nor a rank-local one under any change of the module's layout or first global
// rank (otherwise each rank requests the saved object of the rank L7 assigns it); no
// rerun object under finetune, a disabled rerun mode or a world / TP / PP / DP change; no data
// iterator under finetune or reset_dataloader (under a DP change a saved DP rank's); no
// dp_reshardable slice index under a DP change. An object sharded over DP ranks (the data
// iterator, per-DP-rank RNG) that is requested at all is requested whole: the saved shards no
// rank needs (a smaller DP size) are requested by the module's first rank as main replicas, and
// so is the rerun object: when some modules' ranks request their shards and others' do not,
// the first requesting rank also requests the rest, read and not used
// (megatron-core validates a load's object accesses as a save's, "N ShardedObject are missing").
// The entries are the checkpoint's (planned in the dtype it saved each module's weights in, so an
// fp32 main copy is requested where it holds one), the model weights in RequestedWeightDtype.
// Errors: dp_reshardable under a change other than DP or under a params dtype change, and a
// checkpoint of the other freezing family (L3's errors), a recorded parameter index beyond the
// model (Corruption), modules that differ by name.
Status StateTemplates(const HeterogeneousLayout& layout, const std::vector<TrainingConfig>& configs,
                      const CheckpointInfo& saved, const LoadFlags& flags,
                      std::vector<ShardedStateDict>* out);

// Load: assembles the checkpoint's state from loaded dicts (the templates of StateTemplates,
// filled, with the checkpoint's common state) and applies the load rules (ExpectedStateAfterLoad,
// load_semantics.h) per module. `out` gets one state per module.
// Any replica may supply an element: every loaded entry is read, and replicas of one element that
// disagree are Corruption (naming key, rank and index). Errors: a rank's dict lacks a requested
// entry (NotFound), holds an entry the templates do not request (InvalidArgument: "unexpected"),
// or one whose shape, dtype or data size differs from the template (InvalidArgument); unparsable
// objects or common state (Corruption); and every error of the load rules.
Status RebuildTrainingState(const std::vector<ShardedStateDict>& loaded,
                            const HeterogeneousLayout& layout,
                            const std::vector<TrainingConfig>& configs, const LoadFlags& flags,
                            std::vector<TrainingState>* out);
Status RebuildTrainingState(const std::vector<ShardedStateDict>& loaded, const Layout& layout,
                            const TrainingConfig& config, const LoadFlags& flags,
                            TrainingState* out);

}  // namespace ckptspec
