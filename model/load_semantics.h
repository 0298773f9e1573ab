// Load semantics, the parts independent of sharding: (checkpointed state, new config, new layout,
// flags) -> the expected training state after the load, or a named error. docs/DESIGN.md §4 "Load
// semantics"; docs/SEMANTICS.md §4-§7. Layouts are layout.h's Layout; only their sizes matter here
// (the canonical sharding lives in state_sharding.h).
//
// The expected state starts as InitialTrainingState(new config) and takes, row by row:
//
// | #  | component        | rule                                                                      |
// |----|------------------|---------------------------------------------------------------------------|
// | L0 | flags            | override_scheduler and use_checkpoint_scheduler together: error.          |
// |    |                  | data.dp_size must equal the layout's DP size (both sides): error.         |
// | L1 | model weights    | always loaded, under any layout change (the model is reshardable). The    |
// |    |                  | parameter lists (names, shapes) must agree: error naming the first        |
// |    |                  | difference. Frozen parameters load too. The dtype may change between      |
// |    |                  | fp32, bf16 and fp16 (docs/SEMANTICS.md §4): each weight goes from the     |
// |    |                  | checkpoint's dtype into the run's through its exact value, rounded to     |
// |    |                  | nearest even (bf16 and fp16 into fp32 are exact; dtype_conversion.h); a   |
// |    |                  | finite weight that overflows the run's dtype is an error naming it. Under |
// |    |                  | a dtype change, a parameter whose optimizer state L3 loads takes its      |
// |    |                  | weights from its saved master value instead (the fp32 main copy; an fp32  |
// |    |                  | checkpoint's weights themselves), rounded into the run's dtype: an fp32   |
// |    |                  | run continues from the fp32 masters, a 16-bit run's weights are its main  |
// |    |                  | copy rounded.                                                             |
// | L2 | iteration        | finetune: 0. Otherwise the checkpoint's. A rerun machine L8 does not load |
// |    |                  | starts at this iteration (it counts the loop's iterations).               |
// | L3 | optimizer state  | skipped under finetune or no_load_optim. Otherwise: fully_reshardable     |
// |    |                  | loads under any layout change; dp_reshardable only when TP, PP, CP, EP    |
// |    |                  | and ETP are unchanged (error naming the changed size), the params dtype   |
// |    |                  | is unchanged (its buffers are keyed by it: error naming both dtypes) and  |
// |    |                  | no parameter trainable when saved is frozen now (its buffers are laid out |
// |    |                  | over the trainable parameters: error naming it). Groups match by identity |
// |    |                  | as a bijection (param_groups.h; saved groups whose parameters are all     |
// |    |                  | frozen now are dropped first), keyed with their declared LR bounds when   |
// |    |                  | the saved groups record them, else (older form) without: then two current |
// |    |                  | groups that differ only in LR bounds are an error, never merged. Each     |
// |    |                  | current group keeps its identity and takes the saved group's LR bounds,   |
// |    |                  | hyper-parameters and step. Moments, per-parameter steps and the fp32      |
// |    |                  | master value load; the master value fills both the main and the offload   |
// |    |                  | copy (an fp32 run has no main copy: its weights are the master, L1). The  |
// |    |                  | moments (fp32 in a checkpoint) are rounded to nearest even into the run's |
// |    |                  | moment dtype (fp32 or bf16: kept as saved, or rounded; an overflow is an  |
// |    |                  | error). A trainable parameter without saved optimizer state (frozen when  |
// |    |                  | saved) is an error. Under the torch_optim freezing family                 |
// |    |                  | (training_state.h) groups hold frozen parameters too and none is dropped; |
// |    |                  | each parameter, frozen or not, takes its saved state when it has one and  |
// |    |                  | otherwise stays without (created at its next step). A checkpoint of the   |
// |    |                  | other family is an error.                                                 |
// | L4 | copies           | after any load without optimizer state, the main and offload copies are   |
// |    |                  | refreshed from the loaded model weights (B03, B12: copy coherence).       |
// | L5 | scheduler        | skipped (fresh, num_steps 0) under finetune or no_load_optim (Megatron    |
// |    |                  | loads it inside the optimizer block). Otherwise LoadSchedulerState: from  |
// |    |                  | args under override_scheduler, from the checkpoint under                  |
// |    |                  | use_checkpoint_scheduler, else args must equal the checkpoint (error);    |
// |    |                  | num_steps always from the checkpoint.                                     |
// | L6 | group LR bounds  | under override_scheduler every group's max_lr / min_lr come from the new  |
// |    |                  | config (never the stale saved groups: B05); otherwise from the saved      |
// |    |                  | groups. Every group's lr / weight_decay are then recomputed from the      |
// |    |                  | effective scheduler at its num_steps.                                     |
// | L7 | RNG              | loaded only when not finetune, not no_load_rng, the checkpoint has RNG,   |
// |    |                  | and TP and PP are unchanged. Each rank takes the saved state of the rank  |
// |    |                  | with its (tp, pp, ep, etp) coordinates (and dp under                      |
// |    |                  | data_parallel_random_init): the one at its own dp and cp if saved, else   |
// |    |                  | the lowest dp; missing is an error. Otherwise each rank is freshly seeded.|
// |    |                  | A checkpoint whose RNG is rank-local (rng_saving rank_local: a value per  |
// |    |                  | rank, no sharding declared) loads it only when, besides, the module's     |
// |    |                  | layout is unchanged and its ranks keep their global ranks: each rank then |
// |    |                  | takes its own saved state (a rank-local value goes back only to the rank  |
// |    |                  | of the same global rank). Otherwise each rank is freshly seeded.          |
// | L8 | rerun state      | loaded (LoadRerunPayload) unless finetune or the new mode is DISABLED;    |
// |    |                  | needs world, TP, PP and DP unchanged: under a change a sentinel payload is|
// |    |                  | skipped and a pending rerun is an error. "World" is both the module's and |
// |    |                  | the RUN's (every module's ranks): the payload is keyed by global rank, so |
// |    |                  | a module whose own layout is unchanged still skips it when another        |
// |    |                  | module's change altered the run's world size.                             |
// | L9 | data iterator    | fresh under finetune or reset_dataloader. Otherwise ResumeDataIterator.   |
// |    |                  | The global sampler resumes under any DP size: the run's sample sequence   |
// |    |                  | is global (data_iterator.h), so the resumed run continues it at           |
// |    |                  | consumed_samples, each DP rank taking its slice under the new DP size     |
// |    |                  | (Megatron's MegatronPretrainingSampler). Per-DP-rank loaders (per_rank)   |
// |    |                  | resume only under the saved DP size, each DP rank taking the loader its   |
// |    |                  | own DP rank saved; another DP size is an error naming the saved one (a    |
// |    |                  | loader's position does not carry over to another shard). A checkpoint of  |
// |    |                  | the other sampler kind is an error.                                       |
#pragma once

#include <optional>

#include "model/layout.h"
#include "model/status.h"
#include "model/training_state.h"

namespace ckptspec {

enum class OptimizerFormat { kFullyReshardable, kDpReshardable };

struct LoadFlags {
  bool finetune = false;
  bool no_load_optim = false;
  bool no_load_rng = false;
  bool override_scheduler = false;
  bool use_checkpoint_scheduler = false;
  bool reset_dataloader = false;
};

struct CheckpointDescriptor {
  TrainingState state;  // the saved global state (its config is the saving run's)
  Layout layout;
  OptimizerFormat optimizer_format = OptimizerFormat::kFullyReshardable;
  bool has_rng = true;
  // The saving run's world size (every module's ranks), for L8; 0: layout.world_size().
  int64_t run_world_size = 0;
  // The module's first global rank in the saving run (L7's rank-local rule).
  int64_t first_rank = 0;
  // The dtype the checkpoint saved its model weights in, where `state` holds them converted into
  // another (state.config.model.params_dtype): a load's view of the checkpoint
  // (RebuildTrainingState) holds them as the engine delivered them into the requested dtype.
  // L1 and L3 decide by this one whether the dtype changed. nullopt: the state's own dtype.
  std::optional<DType> saved_params_dtype = std::nullopt;
};

struct ResumeRequest {
  TrainingConfig config;
  Layout layout;
  LoadFlags flags;
  // The resuming run's world size (every module's ranks), for L8; 0: layout.world_size().
  int64_t run_world_size = 0;
  // The module's first global rank in the resuming run (L7's rank-local rule).
  int64_t first_rank = 0;
};

// Which state classes a load takes from the checkpoint, by the flags, the new config and the two
// layouts: the one statement of rows L3/L5 (optimizer), L7 (RNG), L8 (rerun state) and L9 (data
// iterator), used by ExpectedStateAfterLoad and by the load templates (state_sharding.h).
struct LoadedStateClasses {
  bool optimizer = false;  // L3-L6: not finetune, not no_load_optim
  bool rng = false;        // L7: not finetune, not no_load_rng, TP and PP unchanged (the
                           // checkpoint must also hold RNG state)
  bool rerun = false;      // L8: not finetune and the new rerun mode is not DISABLED (a world,
                           // TP, PP or DP change then skips a sentinel payload or is an error)
  bool data = false;       // L9: not finetune, not reset_dataloader (a per_rank sampler then
                           // needs the saved DP size: an error otherwise)
};
LoadedStateClasses StateClassesToLoad(const LoadFlags& flags, const TrainingConfig& config,
                                      const Layout& saved, const Layout& now);

// L3's format rule alone: OK for fully_reshardable; for dp_reshardable FailedPrecondition naming
// the first of TP, PP, CP, EP, ETP that differs between `saved` and `now`.
Status CheckOptimizerFormatChange(OptimizerFormat format, const Layout& saved, const Layout& now);

// L3's dtype rule alone: OK for fully_reshardable or an unchanged params dtype; for
// dp_reshardable under a change FailedPrecondition naming both dtypes.
Status CheckOptimizerDtypeChange(OptimizerFormat format, DType saved, DType now);

// L3's family rule alone: OK when the checkpoint's optimizer follows the run's freezing family,
// else FailedPrecondition naming both.
Status CheckFreezeFamily(FreezeFamily saved, FreezeFamily now);

// L7's rank-local rule alone: whether a module's rank-local RNG (RngSaving::kRankLocal) can load,
// given that L7 loads RNG at all (LoadedStateClasses::rng): the module layout is unchanged (sizes
// and rank order) and its first global rank too, so that every rank keeps its global rank.
bool RankLocalRngLoads(const Layout& saved, int64_t saved_first_rank, const Layout& now,
                       int64_t now_first_rank);

// L7's matching rule alone: the index in `saved` of the rank whose RNG state the rank at `want`
// takes, or -1. Candidates have the same tp, pp, ep and etp (and dp under
// data_parallel_random_init); the one at the same dp and cp is taken (a rank of an unchanged
// layout takes its own state, the entry a framework's template asks for), else the lowest dp,
// first in list order among equals.
int MatchRngRank(const std::vector<RankCoords>& saved, const RankCoords& want,
                 bool data_parallel_random_init);

Status ExpectedStateAfterLoad(const CheckpointDescriptor& ckpt, const ResumeRequest& req,
                              TrainingState* out);

}  // namespace ckptspec
