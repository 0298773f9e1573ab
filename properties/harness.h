// The harness every property runs on: a target under test, made fresh for each case by a factory,
// and the checkpoint I/O of a training run through a target (its framework layer and its engine).
//
// Contracts:
//  - A TargetFactory makes independent targets: nothing a case does reaches the next case.
//  - TargetUnderTest::mem_env() is the in-memory Env the target's storage lives on, when it has
//    one (fault-injection properties need it and are not applicable without it).
//  - SaveRun / ResumeRun do exactly what a training framework does around its checkpointer:
//    framework dicts -> Engine::Save; Engine::Load of the common state first (to learn the saving
//    layout and sharding), templates for the new run, Engine::Load, framework rebuild.
//  - The specification's answer for the same resume is ExpectedResume (model/run_spec.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/run_spec.h"
#include "targets/env/mem_env.h"
#include "targets/process/case_events.h"
#include "targets/reference/format.h"
#include "targets/target.h"

namespace ckptspec {

class TargetUnderTest {
 public:
  virtual ~TargetUnderTest() = default;
  virtual Target& target() = 0;
  // The in-memory Env holding the target's storage, or null.
  virtual MemEnv* mem_env() = 0;
  // The checkpoint root directory on mem_env().
  virtual std::string root() const = 0;
  // Ends the target's process and starts a new one over the same storage: a fresh framework and
  // engine (no plan cache, no pending save). The old engine is destroyed first; whatever it still
  // held is left to its destructor, so a clean exit calls engine().Finalize() before this.
  virtual void NewProcess() = 0;
};

struct TargetOptions {
  // Async saves complete only at Finalize/Save/Load (deterministic tests) rather than on a thread.
  bool deferred_async = true;
  int keep_last = 0;
  // Where a target served by processes records what they did outside any engine call (not owned;
  // outlives the target). The property runner sets it for every target a case makes.
  CaseEvents* events = nullptr;
};

struct TargetFactory {
  std::string name;
  Capabilities capabilities;
  // make() gives targets whose storage is a MemEnv (mem_env() non-null): faults can be injected.
  bool fault_injection = false;
  // What the run expects of the target: false, every property passes (or is n/a); true, the target
  // is a mutant that at least one property must kill (`ckptspec run` exits 0 only when every
  // selected target meets its expectation).
  bool expect_killed = false;
  std::function<std::unique_ptr<TargetUnderTest>(const TargetOptions&)> make;
};

// The reference: the canonical framework and the reference engine on a fresh MemEnv, saving in
// the given index layout (targets/reference/format.h); named "reference" for the single index,
// "reference-per-writer" for the per-writer one.
TargetFactory ReferenceTargetFactory(IndexLayout layout = IndexLayout::kSingle);

// Every rank's dicts from the target's framework, then Engine::Save.
Status SaveRun(Target& target, const RunSpec& run, const std::vector<TrainingState>& states,
               int64_t iteration, const SaveOptions& options);

struct ResumeOptions {
  LoadFlags flags;
  StrictMode strict = StrictMode::kAssumeOkUnexpected;
  std::optional<int64_t> iteration;  // nullopt: the tracker's
};

// Resumes `run` (possibly another layout or config than the save's) from the target's storage.
// *info receives what the framework read of the checkpoint's common state.
Status ResumeRun(Target& target, const RunSpec& run, const ResumeOptions& options,
                 std::vector<TrainingState>* states, CheckpointInfo* info = nullptr);

}  // namespace ckptspec
