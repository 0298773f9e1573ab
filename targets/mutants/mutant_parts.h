// The parts of every mutant of the catalog (targets/mutants/catalog.cc, docs/BUGS.md): one
// function per entry, each defined in its own bNN_<name>.cc, which opens with the bug's mechanism
// and upstream thread (docs/MUTANTS.md has the table). Each comment below is the entry's deviation
// in one line.
//
// Contracts:
//  - BNNParts(process) makes fresh, independent parts for the target's process with that ordinal
//    (MakeParts, targets/reference/reference_target.h); only B29's depend on it.
#pragma once

#include "targets/reference/reference_target.h"

namespace ckptspec {

// B01 swift-lr-mult-pop (ms-swift PR #9517): strips lr_mult from the saved param groups:
// identity is checked only on load.
ReplacedParts B01Parts(int process);

// B02 mimo-optimizer (Megatron-LM PRs #4801 #4791 #4790): a module-common optimizer object whose
// replica id ignores tp_rank.
ReplacedParts B02Parts(int process);

// B03 hdo-cpu-copies-stale (Megatron-Bridge PR #3949; Megatron-LM PR #5071): after a load
// without optimizer state only the fp32 main copies are refreshed, not the CPU-offload copies.
ReplacedParts B03Parts(int process);

// B04 cached-plan-drops-rerun (Megatron-LM PR #4448 (issue #4378)): pre-v0.18 rerun emission
// plus a plan cache that reuses the cached plan when the key set changes.
ReplacedParts B04Parts(int process);

// B05 override-sched-ignored (Megatron-LM #1138, PR #1284): under --override-opt_param-scheduler
// the groups keep the checkpoint's LR bounds.
ReplacedParts B05Parts(int process);

// B06 rerun-inplace-resume (Megatron-LM PR #3981): persists RERUNNING_IN_PLACE, whose resume
// needs an unpersisted RNG snapshot.
ReplacedParts B06Parts(int process);

// B07 dpresh-common-list (radixark/Megatron-LM PR #66): the per-rank dp_reshardable slice list
// goes into common state.
ReplacedParts B07Parts(int process);

// B08 expert-amax-offset (NVIDIA/Model-Optimizer #2209): a per-expert scalar entry (the step
// counter) loses its expert axis.
ReplacedParts B08Parts(int process);

// B09 nvrx-stale-ipc-cache (NeMo-RL #3312; nvidia-resiliency-ext PR #314): async staging cache
// keyed on structure only: later saves write the first save's data.
ReplacedParts B09Parts(int process);

// B10 ft-sampler-offset (Megatron-Bridge PR #4601): the resumed sampler re-applies its resume
// offset at every epoch pass.
ReplacedParts B10Parts(int process);

// B11 rng-reseeded-after-load (ms-swift PR #9935): every rank's RNG is reseeded after the load
// restored it.
ReplacedParts B11Parts(int process);

// B12 bf16-module-only-masters (DeepSpeed PR #4141): masters refreshed after a model-only load
// only for fp16, not bf16.
ReplacedParts B12Parts(int process);

// B13 z0-bf16-optim-lost (DeepSpeed PR #7786): bf16 runs lose the loaded optimizer moments and
// steps.
ReplacedParts B13Parts(int process);

// B14 frozen-dtype (DeepSpeed PR #8378): one category's fp32 master entries carry the
// model-dtype copy.
ReplacedParts B14Parts(int process);

// B15 uneven-shard-cache (torchtitan #1136 / PR #1702): uneven shards are loaded into a copy;
// the destination keeps its old content.
ReplacedParts B15Parts(int process);

// B16 skip-batches-epoch-reset (accelerate PR #4071): the resumed data iterator resets the
// sampler epoch to 0.
ReplacedParts B16Parts(int process);

// B17 rng-state-all (transformers PR #23045): only the first rank's CUDA RNG is restored.
ReplacedParts B17Parts(int process);

// B18 gas-skip-count (transformers #5605 / PR #8624): the resume skip counts optimizer steps as
// micro-batches.
ReplacedParts B18Parts(int process);

// B19 async-error-swallowed (orbax #605 (PR #606); keras #23609): the async save's error is
// dropped.
ReplacedParts B19Parts(int process);

// B20 ocdbt-detect (orbax #924): a format probe that misses a valid index layout.
ReplacedParts B20Parts(int process);

// B21 lr-bound-groups-collapse (Megatron-LM PR #4705): param groups that differ only in their LR
// bounds collapse at load into the last saved one.
ReplacedParts B21Parts(int process);

// B22 torchft-stale-lr (torchtitan PR #4598, PR #4422): the framework serves a cached optimizer
// state dict whose learning rates stay those of its first use, and a load keeps the loaded
// groups' learning rates.
ReplacedParts B22Parts(int process);

// B23 frozen-optim-state-dropped (pytorch/pytorch issue #192202, PR #192307): a load drops the
// saved optimizer state of the parameters frozen now.
ReplacedParts B23Parts(int process);

// B24 lazy-state-requested (torchtitan PR #4474; prime-rl PR #2800): a load requests optimizer
// state for every trainable parameter, also those the checkpoint holds none for.
ReplacedParts B24Parts(int process);

// B25 loader-state-by-rank-index (NVIDIA-NeMo/Megatron-Bridge PR #5637): a resume under a
// smaller DP size restores each new DP rank's data loader from the saved file of the same rank
// index and silently drops the others.
ReplacedParts B25Parts(int process);

// B26 per-rank-skip-rescaled (of this catalog's own design; cf. huggingface/transformers issue
// #22580): a resume under another DP size positions the global sampler by the per-rank count of
// the saving run times the new DP size.
ReplacedParts B26Parts(int process);

// B27 rank-local-merged-by-name (pytorch #120356): rank-local values saved under one key are
// deduplicated by name; every rank reads back one rank's value.
ReplacedParts B27Parts(int process);

// B28 host-staging-aliased (pytorch #144657): an async save stages device tensors by copying
// them to the host and hands host tensors over as they are; the write reads what training made
// of them after the save was scheduled.
ReplacedParts B28Parts(int process);

// B29 optimizer-order-per-process (alf #889, PR #891): optimizer state is stored by each
// parameter's position in an order that holds only within one process.
ReplacedParts B29Parts(int process);

// B30 async-retention-at-schedule (Megatron-Bridge PR #4678; the same class: PR #5184):
// retention for an async save runs when the save is scheduled, counting it as a checkpoint
// already, and removes the older checkpoint the tracker still names.
ReplacedParts B30Parts(int process);

// B31 precision-switch-optim-reset (ParlAI PR #1772, cf. #1771): a resume under another params
// dtype starts the optimizer afresh.
ReplacedParts B31Parts(int process);

// B32 export-drops-frozen (DeepSpeed PR #3205, issue #3090): the consolidated export rebuilds
// the model from the parameters the optimizer holds state for, so a frozen parameter is left
// out.
ReplacedParts B32Parts(int process);

// B33 stateful-replaced-after-load (pytorch PR #138575; torchtitan issue #571, PR #647): after
// the process's first load, a reload in the same process restores only what the framework's
// state dict holds as tensors; the iteration, scheduler, param groups, RNG, data position and
// rerun machine keep what training made of them.
ReplacedParts B33Parts(int process);

}  // namespace ckptspec
