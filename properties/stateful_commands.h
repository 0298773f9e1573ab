// The stateful model-based test (DESIGN.md §8): the specification as the model, a target as the
// system under test, and the operations of a training job as rc::state commands.
//
// Model (StatefulModel): what the spec says the job is: the current run (layout, configs,
// sharding), whether a process is alive and may train, its global training states, the committed
// checkpoint (the one the tracker names: its run, states and iteration) and the async save still
// pending (with whether its commit will be refused).
//
// System under test (StatefulSut): a target from the factory on an in-memory Env, and the "SUT
// process": the training states it resumed from the target (training itself is the spec's
// deterministic step on both sides, so every difference comes from the checkpointer).
//
// Postconditions after EVERY command: the status the target returned is OK exactly when the model
// says so, and the SUT process is alive exactly when the model's is, with identical states.
// Commands and their own postconditions are documented in stateful_commands.cc.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <memory>
#include <optional>
#include <vector>

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include "properties/harness.h"

namespace ckptspec {

struct StatefulCheckpoint {
  RunSpec run;
  int64_t run_version = 0;  // StatefulModel::run_version when it was saved
  bool runtime_frozen = false;  // StatefulModel::runtime_frozen when it was saved
  std::vector<TrainingState> states;
  int64_t iteration = 0;
};

struct StatefulModel {
  Capabilities capabilities;
  RunSpec run;
  // Bumped whenever the run's structure changes (a freeze, a restart under another run): P1
  // applies to a restart only when the checkpoint was saved by the very same run.
  int64_t run_version = 0;
  // The process froze a parameter at runtime: its param groups keep their order minus the emptied
  // ones, while a fresh process of the same config orders them by first trainable parameter.
  // Groups attach by identity, so a resume is right either way, but states compare positionally:
  // P1's bit-for-bit comparison applies only to checkpoints of processes without a runtime freeze.
  bool runtime_frozen = false;
  bool alive = true;      // a process holds training states
  bool must_exit = false;  // the rerun machine asked to checkpoint and exit, or a step failed
  std::vector<TrainingState> states;
  std::optional<StatefulCheckpoint> committed;
  std::optional<StatefulCheckpoint> pending;  // an async save staged, not yet written
  bool pending_refused = false;               // its commit will be refused
  // What the last command's target calls must return (set by apply).
  bool expect_ok = true;
  bool expect_exit_ok = true;  // Restart: the old process's Finalize at its clean exit
};

// What a run of the stateful test executed: commands in all, and per kind / outcome.
struct StatefulStats {
  int64_t commands = 0;
  std::map<std::string, int64_t> by_kind;
};

struct StatefulSut {
  std::unique_ptr<TargetUnderTest> under_test;
  RunSpec run;
  bool alive = true;
  std::vector<TrainingState> states;
  StatefulStats* stats = nullptr;  // counts executed commands when set
  std::set<std::string> events;    // case-level tags: crash, rerun fault, layout change, async save
};

using StatefulCommand = rc::state::Command<StatefulModel, StatefulSut>;

// Each save issues at least this many storage operations (checked whenever a save completes), so
// a crash at op k < kMinSaveOps of a save never lets it commit.
inline constexpr int64_t kMinSaveOps = 16;

// One case of the stateful test: a generated run (gen::RunUpTo(8)), a fresh target from the
// factory, and a generated command sequence run against both. Needs fault injection (mem_env()).
// Adds what it executed to *stats when given.
void CheckStateful(const TargetFactory& factory, StatefulStats* stats = nullptr);

}  // namespace ckptspec
