#include "targets/mutants/catalog.h"

#include <algorithm>
#include <sstream>

#include "targets/mutants/mutant_parts.h"

namespace ckptspec {

// Killers: the properties that kill the mutant in the kill matrix at seed 1 (the most direct ones
// first); docs/MUTANTS.md compares them with the properties meant for each bug (docs/BUGS.md) and
// says why they differ.
const std::vector<MutantInfo>& MutantCatalog() {
  static const std::vector<MutantInfo> kCatalog = {
      {"B01", "swift-lr-mult-pop", "ms-swift PR #9517 (fix #9524)",
       "ToStateDicts saves every param group without `lr_mult`, because identity is checked "
       "only on load; the resume's group matching fails",
       "P8 P1 P2", B01Parts, "P8 P1 P2"},
      {"B02", "mimo-optimizer", "Megatron-LM PRs #4791, #4790, #4801",
       "the replica id of a named module's `optimizer.mimo.{m}.common_state` object ignores "
       "tp_rank, so every TP rank is a main replica",
       "P4 P1 P2 P3", B02Parts, "P4 P1"},
      {"B03", "hdo-cpu-copies-stale", "Megatron-Bridge PR #3949; Megatron-LM PR #5071",
       "after a load without optimizer state, L4 refreshes the copies, then the CPU-offload "
       "copies go back to their initial values",
       "P9", B03Parts, "P9 P3"},
      {"B04", "cached-plan-drops-rerun", "Megatron-LM PR #4448 (issue #4378)",
       "a PlanCache whose Lookup ignores the fingerprint, plus the pre-v0.18 rerun emission "
       "it needs (no object in steady state; requested only when the common state marks the "
       "machine active)",
       "P6 P7 P19", B04Parts, "P6 P7 P19"},
      {"B05", "override-sched-ignored", "Megatron-LM #1138, PR #1284",
       "under override_scheduler with the optimizer loaded, the groups get back the "
       "checkpoint's max_lr/min_lr and lr is recomputed with them",
       "P10", B05Parts, "P10"},
      {"B06", "rerun-inplace-resume", "Megatron-LM #3884, PR #3981",
       "RERUNNING_IN_PLACE is persisted in the payload and the common state; the resume "
       "fails",
       "P19", B06Parts},
      {"B07", "dpresh-common-list", "radixark/Megatron-LM PR #66",
       "each rank's dp_reshardable slice list is also written into its common state, which "
       "makes the common state rank-variant",
       "P11 P2 P3", B07Parts, "P11 P2 P3"},
      {"B08", "expert-amax-offset", "NVIDIA/Model-Optimizer #2209",
       "the per-expert scalar (the step counter of an expert weight) loses its expert axis",
       "P4 P3", B08Parts, "P4 P3"},
      {"B09", "nvrx-stale-ipc-cache", "NeMo-RL #3312; nvidia-resiliency-ext PR #314",
       "the engine's StageAsyncSave step, under assume_constant_structure, caches the staged "
       "tensor bytes keyed on the structure fingerprint, so later async saves write the first "
       "save's data",
       "P7", B09Parts},
      {"B10", "ft-sampler-offset", "Megatron-Bridge PR #4601",
       "the resumed sampler keeps the resume position frozen and re-applies it at every "
       "epoch pass (`DataIteratorState::pass_origin`), so each later epoch replays the tail "
       "of the resume epoch",
       "P1 P12", B10Parts, "P1"},
      {"B11", "rng-reseeded-after-load", "ms-swift PR #9935",
       "after L7 restores the RNG, every rank is reseeded as a fresh run", "P1 P2 P12", B11Parts,
       "P1 P2 P12"},
      {"B12", "bf16-module-only-masters", "DeepSpeed PR #4141",
       "after a load without optimizer state, a bf16 run's main/offload copies go back to "
       "their initial values (the refresh runs for fp16 only)",
       "P9", B12Parts, "P9 P3"},
      {"B13", "z0-bf16-optim-lost", "DeepSpeed PR #7786 (cf. #7571)",
       "for bf16 runs, the loaded moments and the per-parameter and per-group steps are "
       "reset",
       "P1 P2", B13Parts, "P1 P2"},
      {"B14", "frozen-dtype", "DeepSpeed PR #8378",
       "the fp32 master entries of the no-weight-decay category are written from the "
       "model-dtype copy (upcast)",
       "P2", B14Parts, "P2 P1"},
      {"B15", "uneven-shard-cache", "torchtitan #1136 / PR #1702",
       "the engine's OpenHostDestination step loads uneven shards into a copy, so the "
       "destination keeps its pre-load content",
       "P1 P2", B15Parts, "P1 P2"},
      {"B16", "skip-batches-epoch-reset", "accelerate PR #4071",
       "the resumed iterator keeps its position within the epoch but resets the epoch to 0",
       "P1 P12", B16Parts, "P7 P19"},
      {"B17", "rng-state-all", "transformers PR #23045",
       "only the first rank of a module gets its CUDA RNG (the `cuda` stream and the "
       "trackers) restored",
       "P12 P1", B17Parts, "P12 P1"},
      {"B18", "gas-skip-count", "transformers #5605 / PR #8624",
       "the resumed iterator sits at consumed_samples / grad_accum_steps", "P1 P10 P12", B18Parts,
       "P1 P10 P12"},
      {"B19", "async-error-swallowed", "orbax #605 (PR #606); keras #23609",
       "the engine's ReportAsyncSave step drops a pending async save's status, so Finalize "
       "(and the next Save or Load, which finalize first) returns OK",
       "P13 P14", B19Parts},
      {"B20", "ocdbt-detect", "orbax #924",
       "the engine's index-layout probe looks only at the top of the iteration directory, so "
       "a per-writer-index checkpoint (format version 2) is read as a single-index one and "
       "fails with a misleading NotFound for `metadata.json`",
       "P18", B20Parts},
      {"B21", "lr-bound-groups-collapse", "Megatron-LM PR #4705",
       "with the optimizer loaded, the saved param groups are matched to the current ones by "
       "the key without LR bounds, the last saved group winning a shared key, so groups that "
       "differ only in their LR bounds get one group's bounds, lr and step",
       "P8 P18 P2", B21Parts, "P8 P10 P1"},
      {"B22", "torchft-stale-lr", "torchtitan PR #4598 (PR #4422)",
       "the framework emits every param group's lr as it was at the process's first state dict, "
       "and a load keeps the loaded groups' lr instead of the one the scheduler gives",
       "P20 P14 P7", B22Parts, "P7"},
      {"B23", "frozen-optim-state-dropped", "pytorch #192202 (PR #192307)",
       "under the torch.optim freezing family a load drops the saved optimizer state of every "
       "parameter frozen in the loading run (it restores state by requires_grad), so a parameter "
       "trained, frozen and unfrozen restarts from fresh moments and step",
       "P20 P7", B23Parts},
      {"B24", "lazy-state-requested", "torchtitan PR #4474; prime-rl PR #2800",
       "under the torch.optim freezing family the load templates request optimizer state for "
       "every trainable parameter, also those the checkpoint has none for (not stepped when "
       "saved), so such a checkpoint is refused on a missing key",
       "P20 P2", B24Parts},
      {"B25", "loader-state-by-rank-index", "Megatron-Bridge PR #5637",
       "per-DP-rank data loaders resumed under a smaller DP size: each new DP rank restores the "
       "position saved by the DP rank of the same index, in its shard of the new DP size, and the "
       "other saved loaders are dropped, so samples are skipped and repeated where the resume "
       "must be refused",
       "P12 P20", B25Parts},
      {"B26", "per-rank-skip-rescaled", "own design (cf. transformers #22580)",
       "the global sampler resumed under another DP size is positioned by the per-rank count of "
       "the saving run (consumed_samples / saved DP size) times the new DP size, so a larger DP "
       "size skips samples and a smaller one replays them",
       "P12 P3", B26Parts, "P12 P3"},
      {"B27", "rank-local-merged-by-name", "pytorch #120356",
       "rank-local values saved under one key (no sharding declared) are deduplicated by name: "
       "the lowest rank's value is written for every rank, so a resume gives every rank that "
       "rank's RNG state",
       "P12 P1", B27Parts},
      {"B28", "host-staging-aliased", "pytorch #144657",
       "an async save copies its device tensors when it is scheduled and hands its host tensors "
       "over as they are: the write reads what the training steps taken since made of them",
       "P14 P20", B28Parts},
      {"B29", "optimizer-order-per-process", "alf #889, PR #891",
       "the framework stores each parameter's optimizer state under the name of the parameter "
       "at its position in an order that differs in every process, so only the saving process "
       "loads it back right",
       "P1 P2", B29Parts, "P1 P2"},
      {"B30", "async-retention-at-schedule", "Megatron-Bridge PR #4678 (PR #5184)",
       "the engine's AsyncSaveScheduled step runs retention as an async save is scheduled, "
       "counting that save as a checkpoint already, and removes every iteration directory outside "
       "the keep_last newest, the tracker's included; the save's write runs none",
       "P13 P14 P20", B30Parts},
      {"B31", "precision-switch-optim-reset", "ParlAI PR #1772 (cf. #1771)",
       "a resume whose params dtype differs from the checkpoint's gets a fresh optimizer over the "
       "loaded weights: moments and steps reset, the fp32 copies rebuilt from the model weights",
       "P3 P20", B31Parts},
      {"B32", "export-drops-frozen", "DeepSpeed PR #3205 (issue #3090)",
       "the consolidated export keeps a model tensor only when the checkpoint holds its "
       "per-parameter optimizer state, so a frozen parameter is left out of the export and the "
       "resume from its import fails on the missing key",
       "P3", B32Parts},
      {"B33", "stateful-replaced-after-load", "pytorch PR #138575; torchtitan #571 (PR #647)",
       "from the process's second load on, a reload in the same process keeps the live "
       "iteration, param groups, scheduler, RNG, data position and rerun machine (the loaded "
       "copies replaced them in the framework's dict) and restores only the tensors",
       "P20", B33Parts},
  };
  return kCatalog;
}

const MutantInfo* FindMutant(const std::string& id_or_name) {
  for (const MutantInfo& m : MutantCatalog()) {
    if (id_or_name == m.id || id_or_name == m.name) return &m;
  }
  return nullptr;
}

namespace {

std::vector<std::string> Ids(const char* list) {
  std::vector<std::string> ids;
  std::istringstream words(list);
  for (std::string id; words >> id;) ids.push_back(id);
  return ids;
}

}  // namespace

std::vector<std::string> KillerIds(const MutantInfo& info) { return Ids(info.killers); }

std::vector<std::string> FrameworkKillerIds(const MutantInfo& info) {
  return Ids(info.framework_killers);
}

std::vector<const MutantInfo*> MutantsKilledBy(const std::string& property_id) {
  std::vector<const MutantInfo*> killed;
  for (const MutantInfo& m : MutantCatalog()) {
    const std::vector<std::string> ids = KillerIds(m);
    if (std::find(ids.begin(), ids.end(), property_id) != ids.end()) killed.push_back(&m);
  }
  return killed;
}

TargetFactory MutantFactory(const MutantInfo& info) {
  return MutantTargetFactory(info.id, info.parts);
}

}  // namespace ckptspec
