// The entries of one rank under the canonical whole-state sharding, each with its ROLE (which
// state it holds and where its elements come from). Shared by saving (ShardTrainingState), load
// templates (StateTemplates) and rebuilding (RebuildTrainingState), so the three can never
// disagree on structure. The naming and replica rules are documented in state_sharding.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/layout.h"
#include "model/param_sharding.h"
#include "model/sharded.h"
#include "model/state_sharding.h"
#include "model/status.h"
#include "model/training_state.h"

namespace ckptspec {

enum class EntryKind {
  kModel,
  kOptimState,
  kOptimStep,
  kBucket,
  kSliceIndex,
  kRng,
  kRerun,
  kData,
  kModuleCommon,
  // A shard requested only so that its object is read whole (a load may not read part of an
  // object: megatron-core validates a load's accesses as a save's); parsed, not used.
  kReadWhole,
};

// Per-parameter state classes ("slots").
enum StateSlot : int {
  kSlotModel = 0,
  kSlotExpAvg,
  kSlotExpAvgSq,
  kSlotMaster,
  kSlotStep,
  kNumSlots
};

// One model chunk held by the rank: parameter index and, per local element (row-major over the
// chunk), its linear index in the parameter instance.
struct ParamChunk {
  int param = -1;
  TensorSpec spec;
  std::vector<int64_t> instance_index;
};

// A run of a flat-buffer chunk: local elements [dst, dst + length) hold chunk `chunk`'s local
// elements [src, src + length).
struct BucketPiece {
  int chunk = -1;
  int64_t dst = 0, src = 0, length = 0;
};

struct TensorRole {
  EntryKind kind = EntryKind::kModel;
  int slot = kSlotModel;
  int chunk = -1;                   // kModel, kOptimState, kOptimStep
  std::vector<BucketPiece> pieces;  // kBucket
};

struct ObjectRole {
  EntryKind kind = EntryKind::kRng;
  // kRng: the module-local ranks of the SAVING layout whose RNG state the object holds.
  std::vector<int64_t> saved_ranks;
};

struct RankEntries {
  int module = 0;
  ShardedStateDict dict;
  std::vector<TensorRole> tensor_roles;  // parallel to dict.tensors
  std::vector<ObjectRole> object_roles;  // parallel to dict.objects
  // The rank's model chunks, never changed once built, so copies of the entries share them.
  std::shared_ptr<const std::vector<ParamChunk>> chunks;

  // Chunk k. Precondition: chunks holds it.
  const ParamChunk& chunk(size_t k) const { return (*chunks)[k]; }
};

// Which entry classes to build.
struct EntryFilter {
  bool model = true;
  bool optimizer = true;    // moments, steps, buffers, module common object
  bool slice_index = true;  // dp_reshardable only
  bool rng = true;          // the save-side rng_state objects
  bool rerun = true;
  bool data = true;
};

// The object payloads that are the same on every rank of a module for one state: its optimizer
// common state and its rerun state, each kept once computed.
struct ModulePayloads {
  std::optional<std::string> common;
  std::optional<std::string> rerun;
};

class StatePlan {
 public:
  // Whether Make takes the plan from, and puts it into, the process's shared plans.
  enum class Sharing { kShared, kPrivate };

  // Validates the configs against the layout (names, data.dp_size, models) and the sharding.
  //
  // kShared (the default): a plan made before in this process from identical inputs
  // (config_identity.h) is reused, together with the rank structures it has kept: BuildRank
  // builds a rank's entries once per plan and optimizer-state presence, and afterwards copies
  // them, filtered, and fills in the state. The process keeps at most kMaxSharedPlans plans, the
  // most recently made or reused, each of at most kMaxSharedElements parameter elements (larger
  // plans are private) and each keeping at most kMaxKeptRankBytes of rank structures. Safe to
  // use from several threads.
  // kPrivate: a plan of its own that keeps nothing and builds each rank's entries as asked. Both
  // give the same entries (a property compares them).
  static Status Make(const HeterogeneousLayout& layout, const std::vector<TrainingConfig>& configs,
                     const ShardingConfig& sharding, StatePlan* out,
                     Sharing sharing = Sharing::kShared);

  static constexpr size_t kMaxSharedPlans = 4;
  static constexpr int64_t kMaxSharedElements = int64_t{1} << 16;
  static constexpr size_t kMaxKeptRankBytes = size_t{4} << 20;

  // What Make computed from its inputs, immutable once made, and the rank structures a shared
  // plan keeps. Opaque: defined in state_entries.cc.
  struct Fixed;

  // Precondition of the accessors and the builders: made by Make.
  const HeterogeneousLayout& layout() const;
  const TrainingConfig& config(int module) const;
  const TrainingState& structure(int module) const;
  const ShardingConfig& sharding() const;

  // torch_optim freezing family only: which parameters of module `module` have optimizer state
  // (`present` parallel to its parameters): the saved state's (a save), the checkpoint's record (a
  // load). Without a call no parameter has (torch.optim's state is created lazily); the megatron
  // family's every grouped parameter has state, from its config. InvalidArgument for another
  // family, an unknown module or a size that differs. Changes this plan only, never a shared one.
  Status SetOptimizerState(int module, const std::vector<bool>& present);

  // Builds `rank`'s entries. With `state` (the rank's module state) the data is filled; without,
  // tensor data is zeroed and object data empty. `payloads` (optional, with `state`): what earlier
  // calls for ranks of the same module with the same state kept; the first call fills it in.
  Status BuildRank(int64_t rank, const EntryFilter& filter, const TrainingState* state,
                   RankEntries* out, ModulePayloads* payloads = nullptr) const;

  // The rng_state object spec of the module-local `local_rank` under module layout `layout` of a
  // run that saves its RNG as `saving` (rank-local: `local_rank`'s own) with
  // `data_parallel_random_init`, and the module-local ranks whose (identical) RNG it holds.
  static ObjectSpec RngObjectSpec(const std::string& module, const Layout& layout, RngSaving saving,
                                  bool data_parallel_random_init, int64_t local_rank,
                                  std::vector<int64_t>* holders);

  // The rerun_state_machine_state object spec of global rank `rank` in a run of `world` ranks
  // (one shard per global rank, each its own main replica).
  static ObjectSpec RerunObjectSpec(int64_t world, int64_t rank);

  // The data_iterator object spec that DP rank `dp` of module `module` saves under module layout
  // `layout` (one per DP rank, the same state on each; `replica` is the saving rank's (pp, tp,
  // cp)). A load under another DP size requests one of the saved DP ranks' objects by this spec.
  static ObjectSpec DataIteratorObjectSpec(const std::string& module, const Layout& layout,
                                           int64_t dp, const ReplicaId& replica);

  // The JSON of a module's optimizer common part: {"optimizer": sub-optimizers, "opt_param_scheduler"}.
  static nlohmann::json ModuleCommon(const TrainingState& s);

 private:
  struct Module {
    TrainingConfig config;
    TrainingState structure;  // InitialTrainingState(config): the config-determined structure
    std::map<std::pair<std::string, Dims>, int> instance;  // (key, prepended offsets) -> param
    std::vector<int> sub_of_param;                         // -1: in no group
  };
  // The shared plan made from inputs identical to these, or null; and keeping a new one.
  static std::shared_ptr<const Fixed> FindShared(const HeterogeneousLayout& layout,
                                                 const std::vector<TrainingConfig>& configs,
                                                 const ShardingConfig& sharding);
  static void KeepShared(std::shared_ptr<const Fixed> fixed);

  // `rank`'s entries under `filter`, no data (BuildRank without a state) for the module's
  // optimizer-state presence `has_state`.
  Status BuildStructure(int64_t rank, const EntryFilter& filter, const std::vector<bool>& has_state,
                        RankEntries* out) const;
  // The kept structure of `rank` under every filter, built and kept on first use.
  Status KeptStructure(int64_t rank, std::shared_ptr<const RankEntries>* out) const;
  // Fills `entries` (a structure of `rank`) with the module state `state`, taking the payloads
  // the module's ranks share from `payloads` where kept, and keeping them there.
  Status Fill(int64_t rank, const TrainingState& state, ModulePayloads* payloads,
              RankEntries* entries) const;
  // fully_reshardable moments (with `moments`) and the per-parameter step tensors (always).
  void AppendOptimizer(const Module& m, int module_index, int64_t local_rank, bool moments,
                       const std::vector<bool>& has_state, RankEntries* out) const;
  // dp_reshardable flat-buffer chunks and (with slice_index) the per-DP-rank slice index objects.
  void AppendBuckets(const Module& m, int module_index, int64_t local_rank, bool slice_index,
                     RankEntries* out) const;

  std::shared_ptr<const Fixed> fixed_;
  std::vector<std::vector<bool>> has_state_;  // per module, per parameter: its state is saved
};

// The load request of every rank (StateTemplates) with roles; rng_state objects carry the SAVING
// layout's module-local ranks whose RNG they hold. With `plan_out`, also the plan they were built
// from (its structure(m) is InitialTrainingState(configs[m]) in the checkpoint's params dtype,
// SavedParamsDtype).
Status BuildTemplateEntries(const HeterogeneousLayout& layout,
                            const std::vector<TrainingConfig>& configs, const CheckpointInfo& saved,
                            const LoadFlags& flags, std::vector<RankEntries>* out,
                            StatePlan* plan_out = nullptr);

// The dtype the checkpoint saved module `module`'s weights in: its common "params_dtype", or (a
// checkpoint without it) the run's.
DType SavedParamsDtype(const CheckpointInfo& saved, const std::vector<TrainingConfig>& configs,
                       size_t module);

// "optimizer." or "optimizer.mimo.{module}.".
std::string OptimizerPrefix(const std::string& module);
// "{module}" or "model".
std::string OriginModule(const std::string& module);

}  // namespace ckptspec
