// The target interface: what every property runs against (docs/DESIGN.md §2, §6, §7, §11).
//
// A target is a framework layer (training state <-> per-rank sharded state dicts) plus an engine
// layer (per-rank sharded state dicts <-> storage). The reference implements both; each mutant is
// the reference with one deviation; process adapters forward the engine calls to other processes.
//
// Contracts of the engine layer (every implementation):
//  - Every call returns a Status; nothing throws.
//  - Save(iteration, input, options) hands the engine one ShardedStateDict per rank, in rank
//    order (SaveInput). A synchronous save returns once the checkpoint is committed and the
//    tracker names it. An asynchronous save returns once the data is staged: the caller keeps
//    the input's buffers and updates them in place as training goes on, and those later values
//    never reach the checkpoint (P14). It completes at Finalize(), at a Poll() that finds its
//    write finished, or at the next Save/Load, which finalize first; its error surfaces at that
//    call and is never dropped (B19). The tracker names the iteration only after its files are
//    complete.
//  - Several async saves in flight (docs/SEMANTICS.md §3): an engine that declares
//    Capabilities::overlapping_async holds up to TargetOptions::max_async_in_flight of them (1
//    otherwise, and by default: every Save then completes the pending one first). Saves commit
//    in the order they were scheduled; an async Save with the bound reached first completes the
//    oldest, a sync Save and a Load complete every one first. They complete oldest first, and
//    each error surfaces at a call of its own, in schedule order: Finalize completes them until
//    one fails and returns that error (the rest stay in flight for the next call), Poll the same
//    for those whose write has ended. Retention counts only committed checkpoints.
//  - Load(request, result) resolves the directory (an iteration or the tracker's), loads into
//    copies of the templates and reports per StrictMode (docs/SEMANTICS.md §4).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/sharded.h"
#include "model/state_sharding.h"
#include "model/status.h"
#include "targets/strict_mode.h"

namespace ckptspec {

struct SaveOptions {
  // Validate the sharding of every rank's dict first (P4, P5, P11) and refuse a bad one.
  bool validate = true;
  // Megatron's --ckpt-assume-constant-structure: may reuse the previous save plan when the
  // structure is unchanged (the reference re-plans whenever it changed: P7).
  bool assume_constant_structure = false;
  // Stage the data and write it later (see Finalize).
  bool async = false;
  // Free-form description of the layout, stored in the metadata.
  nlohmann::json layout = nlohmann::json::object();
};

// Where a save input's tensor lives in the training process. Staging an async save copies a
// device tensor into host memory; a host tensor (a CPU-offloaded optimizer state, a CPU-only run)
// needs a copy too, or the write reads what training made of it after the save was scheduled
// (docs/BUGS.md B28).
enum class Placement : uint8_t { kDevice, kHost };

const char* PlacementName(Placement placement);

// What Engine::Save is handed: every rank's dict, in rank order, and where each tensor lives.
// The dicts are shared with the caller, who may keep them and update their buffers in place as
// soon as Save returns (a training loop whose state dict's tensors are views of its parameters):
// an engine may hold the input past Save, but what an async save writes must be the values at
// Save. Nothing here copies except the constructor from a const reference.
class SaveInput {
 public:
  // Takes the dicts; every tensor on the device.
  SaveInput(std::vector<ShardedStateDict>&& every_rank);  // NOLINT: implicit on purpose
  // A copy of the dicts; every tensor on the device.
  SaveInput(const std::vector<ShardedStateDict>& every_rank);  // NOLINT: implicit on purpose
  // The caller's dicts `live` (null: no rank), shared: placement[r][i] is where
  // (*live)[r].tensors[i] lives; a missing row or column means the device.
  SaveInput(std::shared_ptr<const std::vector<ShardedStateDict>> live,
            std::vector<std::vector<Placement>> placement);

  const std::vector<ShardedStateDict>& every_rank() const { return *every_rank_; }
  // The dicts as shared with the caller: holding this keeps the caller's buffers alive.
  const std::shared_ptr<const std::vector<ShardedStateDict>>& shared() const { return every_rank_; }
  Placement placement(size_t rank, size_t tensor) const;

 private:
  std::shared_ptr<const std::vector<ShardedStateDict>> every_rank_;
  std::vector<std::vector<Placement>> placement_;
};

// A placement for SaveInput: every tensor of every rank of `every_rank` on `where`.
std::vector<std::vector<Placement>> EveryTensorOn(const std::vector<ShardedStateDict>& every_rank,
                                                  Placement where);

struct LoadRequest {
  // The iteration to load; nullopt: the one the tracker names.
  std::optional<int64_t> iteration;
  // One template per rank of the loading layout: specs with data buffers of the right size.
  std::vector<ShardedStateDict> templates;
  StrictMode strict = StrictMode::kAssumeOkUnexpected;
  // Megatron's allow_shape_mismatch: a tensor whose global shape differs is zero-filled and the
  // overlap read, instead of an error.
  bool allow_shape_mismatch = false;
};

struct LoadResult {
  int64_t iteration = -1;
  // The templates filled in (their own buffers), in rank order; unexpected entries are removed
  // (every mode but assume_ok_unexpected); `common` is the checkpoint's common state. After an
  // error its content is unspecified.
  std::vector<ShardedStateDict> state;
  // Per rank: the requested keys the checkpoint lacks (return_* modes only; log_* modes name them
  // in `warnings`).
  std::vector<std::vector<std::string>> unexpected;
  // Checkpoint keys no rank requested (return_all only; log_all names them in `warnings`,
  // raise_all in its error).
  std::vector<std::string> missing;
  // Lines the log_* modes emit.
  std::vector<std::string> warnings;
};

struct Capabilities {
  bool resharding = false;     // load under another layout (P3)
  bool objects = false;        // ShardedObjects
  bool async = false;          // SaveOptions::async
  bool checksums = false;      // corruption of data is detected (P16)
  bool plan_cache = false;     // SaveOptions::assume_constant_structure
  bool deterministic = false;  // same input, byte-identical files (P17)
  bool strict_modes = false;   // every StrictMode
  // Several async saves in flight (TargetOptions::max_async_in_flight). Not on the adapter
  // protocol's wire: a process adapter holds one async save at a time.
  bool overlapping_async = false;
};

// The engine layer.
class Engine {
 public:
  Engine() = default;
  Engine(const Engine&) = delete;  // a polymorphic base: never copied
  Engine& operator=(const Engine&) = delete;
  virtual ~Engine() = default;
  virtual Capabilities capabilities() const = 0;
  virtual Status Save(int64_t iteration, SaveInput input, const SaveOptions& options) = 0;
  // Completes the async saves in flight, oldest first (no-op without one), and returns OK; or
  // the first one's error that fails, leaving the saves after it in flight.
  virtual Status Finalize() = 0;
  // What a training loop calls after each step while an async save is pending (Megatron's
  // maybe_finalize_async_save(blocking=False), a DCP future's done()): never waits for a write.
  // Completes, oldest first, the saves in flight whose write has finished, as Finalize does
  // (stopping at the first one still running, or at the first error, which it returns); *complete
  // is true when none is left in flight. Without a pending save: OK, *complete true. Under
  // deferred execution (TargetOptions::deferred_async) a Poll runs and completes the oldest save
  // only.
  virtual Status Poll(bool* complete) = 0;
  // Takes the request by value: move the templates in and their buffers are filled in place and
  // handed back in result->state (no copy of the state).
  virtual Status Load(LoadRequest request, LoadResult* result) = 0;
};

// What a load gives the framework layer to rebuild training states from (FromStateDicts): the
// loaded entries and everything that led to them. References into the caller's objects; valid
// for the call only.
struct LoadedCheckpoint {
  // Every rank's filled templates, with the checkpoint's common state (LoadResult::state).
  const std::vector<ShardedStateDict>& loaded;
  // What this framework's LoadTemplates requested, rank by rank: the specs, data empty
  // (RequestedSpecs of the templates).
  const std::vector<ShardedStateDict>& requested;
  // What ReadCheckpointInfo read from the checkpoint's common state (with the state itself in
  // saved.common).
  const CheckpointInfo& saved;
  const HeterogeneousLayout& layout;           // the loading run's layout
  const std::vector<TrainingConfig>& configs;  // the loading run's configs, one per module
  const LoadFlags& flags;
  // The loading process's own training states when it reloads a checkpoint in the same process
  // (a rollback: harness/harness.h, ReloadInProcess), else null (a fresh process). The spec's
  // framework does not read them: a reload gives exactly what a fresh process's load gives
  // (docs/SEMANTICS.md §10); they are here for a framework whose objects outlive the load.
  const std::vector<TrainingState>* live = nullptr;
  // The same load with other loaded entries (e.g. ToCanonicalLoad's), for a framework that
  // rearranges them before the canonical rebuild.
  LoadedCheckpoint WithLoaded(const std::vector<ShardedStateDict>& other) const {
    return LoadedCheckpoint{other, requested, saved, layout, configs, flags, live};
  }
};

// The framework layer: training state <-> per-rank sharded state dicts. The canonical framework
// is the spec's own (model/state_sharding.h); a mutant overrides one method to reproduce a bug;
// an adapter may bring its own.
//
// Contracts (every implementation):
//  - ToStateDicts: every rank's dict for a save of `states` (one per module of `layout`).
//  - ReadCheckpointInfo: the saving layout and sharding config, from a checkpoint's common state
//    (kept in info->common).
//  - LoadTemplates: what every rank of the loading `layout` requests for a run with `configs`
//    under `flags` from the checkpoint `saved` describes (specs of the NEW layout; buffers sized).
//  - FromStateDicts: the training states after the load, from the filled templates, with the load
//    rules applied (flags, copy refresh, scheduler, RNG, data iterator); named errors otherwise.
// A load calls ReadCheckpointInfo, LoadTemplates and FromStateDicts in this order
// (harness/harness.h: ResumeRun); what FromStateDicts needs of the others is in
// LoadedCheckpoint. The methods are const, and a framework may still keep per-process state in
// mutable members, as real ones do (memoized templates or plans, a cached state dict, an order of
// parameters): it lives as long as the object, and the target makes a new framework object for
// every process (TargetUnderTest::NewProcess), so none of it survives a restart. No result may
// depend on it: a load in a new process must give what the same load in the saving process gives
// (the resuming properties restart before they load to check it; the catalog's B29 does not).
// Calls come from one thread at a time.
class FrameworkLayer {
 public:
  FrameworkLayer() = default;
  FrameworkLayer(const FrameworkLayer&) = delete;  // a polymorphic base: never copied
  FrameworkLayer& operator=(const FrameworkLayer&) = delete;
  virtual ~FrameworkLayer() = default;
  virtual Status ToStateDicts(const HeterogeneousLayout& layout,
                              const std::vector<TrainingState>& states,
                              const ShardingConfig& sharding,
                              std::vector<ShardedStateDict>* every_rank) const = 0;
  virtual Status ReadCheckpointInfo(const nlohmann::json& common, CheckpointInfo* info) const = 0;
  virtual Status LoadTemplates(const HeterogeneousLayout& layout,
                               const std::vector<TrainingConfig>& configs,
                               const CheckpointInfo& saved, const LoadFlags& flags,
                               std::vector<ShardedStateDict>* every_rank) const = 0;
  virtual Status FromStateDicts(const LoadedCheckpoint& load,
                                std::vector<TrainingState>* states) const = 0;
};

// The canonical framework layer: model/state_sharding.h as it is. Its FromStateDicts
// (RebuildTrainingState) accepts exactly the entries its own LoadTemplates requests: a framework
// that requests other entries maps what it loaded back with ToCanonicalLoad first.
class CanonicalFramework : public FrameworkLayer {
 public:
  Status ToStateDicts(const HeterogeneousLayout& layout, const std::vector<TrainingState>& states,
                      const ShardingConfig& sharding,
                      std::vector<ShardedStateDict>* every_rank) const override;
  Status ReadCheckpointInfo(const nlohmann::json& common, CheckpointInfo* info) const override;
  Status LoadTemplates(const HeterogeneousLayout& layout,
                       const std::vector<TrainingConfig>& configs, const CheckpointInfo& saved,
                       const LoadFlags& flags,
                       std::vector<ShardedStateDict>* every_rank) const override;
  Status FromStateDicts(const LoadedCheckpoint& load,
                        std::vector<TrainingState>* states) const override;
};

// What a framework supplies for a canonical entry its load lacks (ToCanonicalLoad): each function
// fills the entry (a tensor's data is sized and zeroed, an object's empty) of rank `rank` and
// returns true, or returns false to leave it missing. Either may be empty (nothing supplied).
struct MissingEntryFill {
  std::function<bool(size_t rank, ShardedTensor* tensor)> tensor;
  std::function<bool(size_t rank, ShardedObject* object)> object;
};

// The load as the canonical framework would have requested it: for every rank, the entries of
// the canonical templates (StateTemplates for load.layout, load.configs, load.saved, load.flags),
// in their order, each taken from load.loaded's entry of the same rank and key (a tensor: and
// global offset and local shape; an object: unique key) or, where the load lacks it, from `fill`;
// the common state is the loaded one. Loaded entries the canonical templates do not request are
// left out. Errors: the canonical templates' (StateTemplates); NotFound naming the rank and the
// entry that neither the load nor `fill` supplies.
Status ToCanonicalLoad(const LoadedCheckpoint& load, const MissingEntryFill& fill,
                       std::vector<ShardedStateDict>* canonical);

// The state classes a framework may load by a rule of its own (OwnLoadRule): those a load flag
// keeps the canonical load from requesting and loading (model/load_semantics.h: L7's
// no_load_rng, L9's reset_dataloader).
enum class OwnRuleClass { kRng, kDataIterator };

// A framework's own rule for one state class, in place of the spec's row for it.
struct OwnLoadRule {
  OwnRuleClass replaces = OwnRuleClass::kDataIterator;
  // Sets that class of `state`, module `module`'s state as the canonical rules rebuilt it with the
  // class fresh (as if its flag had been given), from the load: load.loaded holds the framework's
  // own entries (those its LoadTemplates added), load.flags the flags as the run gave them (the
  // rule honours finetune and the class's own flag itself). An error ends the load with it.
  std::function<Status(const LoadedCheckpoint& load, size_t module, TrainingState* state)> apply;
};

// The flags under which the canonical framework neither requests nor loads `replaced`'s state:
// `flags` with no_load_rng (kRng) or reset_dataloader (kDataIterator) set. A framework with its
// own rule for the class requests CanonicalFramework::LoadTemplates under these flags and adds
// its own entries.
LoadFlags FlagsLeavingOut(const LoadFlags& flags, OwnRuleClass replaced);

// FromStateDicts for a framework with its own rule for one class: ToCanonicalLoad (with `fill`)
// and the canonical rebuild under FlagsLeavingOut(load.flags, rule.replaces), then rule.apply
// for every module. The canonical rules' refusals for the other classes stand; the replaced
// class's (L9's per-DP-rank loaders under a new DP size, say) are the rule's to make.
Status RebuildWithOwnRule(const LoadedCheckpoint& load, const MissingEntryFill& fill,
                          const OwnLoadRule& rule, std::vector<TrainingState>* states);

// The specs of `templates`, data empty: what LoadedCheckpoint::requested holds.
std::vector<ShardedStateDict> RequestedSpecs(const std::vector<ShardedStateDict>& templates);

class Env;  // base/env.h

// A target's consolidated export (docs/SEMANTICS.md §10): one checkpoint written as one
// self-contained file, and that file imported back as a checkpoint of other storage, which any
// layout resumes from (PyTorch DCP's dcp_to_torch_save and torch_save_to_dcp, DeepSpeed's
// zero_to_fp32 and universal checkpoint). The reference's is targets/reference/checkpoint_export.h.
//
// Contracts:
//  - Export(iteration, env, path): the complete checkpoint `iteration` of the target's storage
//    (a pending async save is finalized first) becomes the file `path` on `env`, replaced
//    atomically. It holds every entry of the checkpoint: every tensor whole (every parameter,
//    frozen ones included; the optimizer state), every object and the common state.
//  - Import(env, path, into, iteration): reads the export `path` on `env` and saves its checkpoint
//    through `into` (an engine over other storage) synchronously at the export's iteration, set in
//    *iteration. A resume from it under any layout and flags gives exactly what a resume from the
//    exported checkpoint gives. An export that is not well formed is an error naming the file and
//    what is wrong, and nothing is saved.
class CheckpointExport {
 public:
  CheckpointExport() = default;
  CheckpointExport(const CheckpointExport&) = delete;  // a polymorphic base: never copied
  CheckpointExport& operator=(const CheckpointExport&) = delete;
  virtual ~CheckpointExport() = default;
  virtual Status Export(int64_t iteration, Env* env, const std::string& path) = 0;
  virtual Status Import(Env* env, const std::string& path, Engine& into, int64_t* iteration) = 0;
};

// A target: a name, a framework layer and an engine layer.
class Target {
 public:
  Target() = default;
  Target(const Target&) = delete;  // a polymorphic base: never copied
  Target& operator=(const Target&) = delete;
  virtual ~Target() = default;
  virtual std::string name() const = 0;
  virtual const FrameworkLayer& framework() const = 0;
  virtual Engine& engine() = 0;
  // The target's consolidated export of its checkpoints, or null where it has none.
  virtual CheckpointExport* checkpoint_export() { return nullptr; }
};

// A template for `state`: same specs, data buffers zeroed (objects emptied), common cleared.
ShardedStateDict TemplateOf(const ShardedStateDict& state);

}  // namespace ckptspec
