// The operations of a training job as data, with the specification's view of each and the same
// operation on a target: what the stateful test (stateful_commands.h, RapidCheck generates the
// operations) and the op-sequence fuzzer (fuzz/op_sequence_fuzzer.cc, libFuzzer's input decodes
// into them) both run. Nothing here depends on RapidCheck.
//
// Model (StatefulModel): what the spec says the job is: the current run (layout, configs,
// sharding), whether a process is alive and may train, its global training states, the committed
// checkpoint (the one the tracker names: its run, states and iteration) and the async saves still
// in flight (several at once up to the target's bound: docs/SEMANTICS.md §3), oldest first.
//
// Storage keeps every checkpoint the job committed (but what retention removes: keep_last), each
// under its iteration until
// a later save of the same iteration replaces it: the model keeps them all (on_disk), the one the
// tracker names among them (committed), so that a reload in the same process may pick an older one.
//
// System under test (StatefulSut): a target from the factory on an in-memory Env, and the "SUT
// process": the training states it resumed from the target (training itself is the spec's
// deterministic step on both sides, so every difference comes from the checkpointer).
//
// Postconditions after EVERY operation: the status the target returned is OK exactly when the
// model says so, and the SUT process is alive exactly when the model's is, with identical states.
// The operations and their own postconditions are tabled in stateful_ops.cc.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/copy_on_write.h"
#include "model/run_spec.h"
#include "model/sharded.h"
#include "targets/target_factory.h"

namespace ckptspec {

struct StatefulCheckpoint {
  RunSpec run;
  int64_t run_version = 0;      // StatefulModel::run_version when it was saved
  bool runtime_frozen = false;  // StatefulModel::runtime_frozen when it was saved
  // The states saved, never changed after the save: RapidCheck copies the model for every
  // command it generates, and the copies share them.
  std::shared_ptr<const std::vector<TrainingState>> states;
  int64_t iteration = 0;
};

// The model's training states, shared by the copies of a model until one of them changes them
// (copy on write): RapidCheck copies the model for every command it generates and every one it
// runs, and most commands leave the states alone. Reads see a const vector; writes go through
// Mutable(), which copies first when another model or a checkpoint shares them.
class SharedStates {
 public:
  SharedStates() : states_(std::make_shared<std::vector<TrainingState>>()) {}

  operator const std::vector<TrainingState>&() const { return get(); }  // NOLINT: a view
  const std::vector<TrainingState>& get() const { return states_.get(); }
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  const TrainingState& operator[](size_t i) const { return get()[i]; }
  std::vector<TrainingState>::const_iterator begin() const { return get().begin(); }
  std::vector<TrainingState>::const_iterator end() const { return get().end(); }

  std::vector<TrainingState>* Mutable() { return states_.Mutable(); }
  SharedStates& operator=(std::vector<TrainingState>&& states) {
    states_.Reset(std::make_shared<std::vector<TrainingState>>(std::move(states)));
    return *this;
  }
  void clear() { states_.Reset(std::make_shared<std::vector<TrainingState>>()); }
  // The states as they are now, for a checkpoint: later writes through Mutable() copy first.
  std::shared_ptr<const std::vector<TrainingState>> Share() const { return states_.Share(); }

 private:
  CopyOnWrite<std::vector<TrainingState>> states_;
};

struct StatefulModel {
  Capabilities capabilities;
  bool fault_injection = false;  // the target's storage is a MemEnv: Crash applies
  RunSpec run;
  // Bumped whenever the run's structure changes (a freeze, a restart under another run): P1
  // applies to a restart only when the checkpoint was saved by the very same run.
  int64_t run_version = 0;
  // The process froze a parameter at runtime under the megatron freezing family: its param groups
  // keep their order minus the emptied ones, while a fresh process of the same config orders them
  // by first trainable parameter (torch.optim's groups never change, so its freezes leave this).
  // Groups attach by identity, so a resume is right either way, but states compare positionally:
  // P1's bit-for-bit comparison applies only to checkpoints of processes without a runtime freeze.
  bool runtime_frozen = false;
  bool alive = true;       // a process holds training states
  bool must_exit = false;  // the rerun machine asked to checkpoint and exit, or a step failed
  SharedStates states;
  std::optional<StatefulCheckpoint> committed;
  std::optional<StatefulCheckpoint> pending;  // an async save staged, not yet written
  // The async saves scheduled before `pending` and still in flight, oldest first: with several in
  // flight (max_in_flight, TargetOptions::max_async_in_flight) `pending` is the newest.
  std::deque<StatefulCheckpoint> earlier_pending;
  int max_in_flight = 1;
  // Retention (TargetOptions::keep_last): after every commit only the keep_last newest
  // checkpoints and the tracker's stay on storage; 0 keeps them all.
  int keep_last = 0;
  // Iterations whose directory may still be on storage though on_disk lacks it (a crashed save
  // of it may have moved it aside): retention counts them, and on_disk keeps only what surely
  // survives it.
  std::set<int64_t> maybe_on_disk;
  // Every complete checkpoint on storage by iteration, the committed one included: a save of an
  // iteration replaces its directory, and a crashed save may have removed it (it is then dropped
  // here, unless the tracker names it: that one is never overwritten).
  std::map<int64_t, StatefulCheckpoint> on_disk;
  // What the last operation's target calls must return (set by ApplyOp).
  bool expect_ok = true;
};

// What a run executed: operations in all, and per kind / outcome.
struct StatefulStats {
  int64_t commands = 0;
  std::map<std::string, int64_t> by_kind;
};

struct StatefulSut {
  std::unique_ptr<TargetUnderTest> under_test;
  RunSpec run;
  bool alive = true;
  std::vector<TrainingState> states;
  // The last async save's input while it may still be pending: the process's own dicts, every
  // tensor on the host, shared with the engine; each Train writes its new state into them in
  // place (WriteStateInPlace) until a Save, Finalize, Crash, Restart or Heal completes it.
  std::shared_ptr<std::vector<ShardedStateDict>> live;
  StatefulStats* stats = nullptr;  // counts executed operations when set
  std::set<std::string> events;    // case-level tags: crash, rerun fault, layout change, async save
  // Loads this process has made (a restart's resume, a heal's join, reloads): a reload after an
  // earlier load meets whatever the framework kept from that one.
  int64_t loads_in_process = 0;
};

// Each save issues at least this many storage operations (checked whenever a save completes), so
// a crash at op k < kMinSaveOps of a save never lets it commit.
inline constexpr int64_t kMinSaveOps = 16;

enum class OpKind {
  kTrain,
  kSave,
  kFinalize,
  kRerunFault,
  kCrash,
  kRestart,
  kFreeze,
  kHeal,
  kUnfreeze,
  kReload,
};
enum class RestartKind { kSameRun, kOtherRun, kAddParameter };

// One operation and its arguments (only the fields of its kind matter).
struct StatefulOp {
  OpKind kind = OpKind::kTrain;
  int64_t n = 1;        // kTrain: iterations
  bool async = false;   // kSave
  bool cached = false;  // kSave: plan cache on (SaveOptions::assume_constant_structure)
  // kSave: training steps the process takes first (a loop's step, then its save), 0 for none.
  int64_t train_first = 0;
  // kCrash: the storage operation of a sync save that crashes, or -1: power loss right after the
  // save returned. Only k < kMinSaveOps has a spec (the save never commits).
  int64_t at_op = -1;
  // kCrash with at_op >= 0: how many of the async saves in flight the process completes first (a
  // Poll each, deferred execution), so the crash falls between any two of their commits.
  int64_t completed_first = 0;
  RestartKind restart = RestartKind::kSameRun;  // kRestart
  RunSpec run;        // kRestart, kOtherRun / kAddParameter: the run the new process resumes
  LoadFlags flags;    // kRestart, kOtherRun
  std::string added;  // kRestart, kAddParameter: what was added, in words
  size_t module = 0;  // kFreeze, kUnfreeze: the module
  std::string key;    // kFreeze, kUnfreeze: every instance of this checkpoint key
  // kReload: the iteration of the checkpoint the process reloads.
  int64_t iteration = 0;
};

// Whether `op` applies to the model's state (where it does not, it is not run).
bool OpApplies(const StatefulOp& op, const StatefulModel& m);

// The spec's view: *m becomes the state after `op`, with expect_ok set.
void ApplyOp(const StatefulOp& op, StatefulModel* m);

// Runs `op` on the SUT; `before` is the model before it and `next` the model after ApplyOp.
// Returns the first postcondition that fails, in words; empty when the SUT agrees with the spec.
std::string RunOp(const StatefulOp& op, const StatefulModel& before, const StatefulModel& next,
                  StatefulSut* sut);

// "Train(2)", "Save(async, plan cache on)", "Crash(a sync save crashes at its storage op 3; ...)".
std::string DescribeOp(const StatefulOp& op);

// The initial model and SUT of a scenario: `run`'s initial states on both sides, a fresh target
// from `factory` made with `options` (its bound of async saves in flight where the factory
// declares overlapping_async, and its keep_last). Crash applies only where the factory injects
// faults. Errors: the run's states do not build.
Status StartScenario(const TargetFactory& factory, const RunSpec& run, StatefulModel* model,
                     StatefulSut* sut, const TargetOptions& options = TargetOptions());

// The async saves in flight: earlier_pending and pending.
size_t SavesInFlight(const StatefulModel& m);

// For RestartKind::kAddParameter: `run` with biases (when `prefer_bias` and module `module` has
// none) or one more layer per PP stage in that module; the new layers' instances of a frozen key
// are frozen too (a stacked key is frozen in every instance or none). *added says what, in words.
// InvalidArgument when the grown model no longer fits its layout or config.
Status RunWithAddedParameter(const RunSpec& run, size_t module, bool prefer_bias, RunSpec* out,
                             std::string* added);

// For kReload: the iterations a live process may reload, ascending: every checkpoint on storage
// and the pending async save's (the load completes it first); those whose run has another layout
// only where the target reshards.
std::vector<int64_t> ReloadableIterations(const StatefulModel& m);

// For kFreeze: the distinct trainable checkpoint keys of module `module` of a live process, or
// nothing when fewer than two remain (one trainable key is always kept).
std::vector<std::string> FreezableKeys(const StatefulModel& m, size_t module);

// For kUnfreeze: the distinct frozen checkpoint keys of module `module` of a live process whose
// config follows the torch.optim freezing family (the megatron family cannot unfreeze).
std::vector<std::string> UnfreezableKeys(const StatefulModel& m, size_t module);

}  // namespace ckptspec
