// A target under test and the factory that makes one fresh for each property case: what the
// properties (properties/), the target registry and plugins receive. The reference's factory is
// targets/reference/reference_factory.h, the mutants' targets/mutants/mutant_target.h, the
// adapters' runner/adapter_target.h.
//
// Contracts:
//  - A TargetFactory makes independent targets: nothing a case does reaches the next case.
//  - TargetUnderTest::mem_env() is the in-memory Env the target's storage lives on, when it has
//    one (fault-injection properties need it and are not applicable without it).
//  - TargetUnderTest::storage_env() is the Env root() lives on: mem_env() when there is one, else
//    the real disk's (Env::Posix()) for a target served by other processes.
//  - TargetUnderTest::storage_recorder(), when not null, records what the target's processes do
//    under root() and injects storage faults into it (crash/fs_recorder.h): the crash-state and
//    storage-fault forms of P13 and P14 need it (TargetFactory::disk_faults).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "model/framework_support.h"
#include "base/env.h"
#include "base/mem_env.h"
#include "targets/tested_framework.h"
#include "targets/process/case_events.h"
#include "targets/target.h"

namespace ckptspec {

class FsRecorder;  // crash/fs_recorder.h

class TargetUnderTest {
 public:
  TargetUnderTest() = default;
  TargetUnderTest(const TargetUnderTest&) = delete;  // a polymorphic base: never copied
  TargetUnderTest& operator=(const TargetUnderTest&) = delete;
  virtual ~TargetUnderTest() = default;
  virtual Target& target() = 0;
  // The in-memory Env holding the target's storage, or null.
  virtual MemEnv* mem_env() = 0;
  // The Env holding root(): mem_env() by default.
  virtual Env* storage_env() { return mem_env(); }
  // The recorder of the target's processes' file-system operations (shared by every target of
  // the factory), or null.
  virtual FsRecorder* storage_recorder() { return nullptr; }
  // The checkpoint root directory on storage_env().
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
  // The most async saves in flight at once, for an engine that declares
  // Capabilities::overlapping_async (others hold one).
  int max_async_in_flight = 1;
  // Where a target served by processes records what they did outside any engine call (not owned;
  // outlives the target). The property runner sets it for every target a case makes.
  CaseEvents* events = nullptr;
};

struct TargetFactory {
  std::string name;
  Capabilities capabilities;
  // make() gives targets whose storage is a MemEnv (mem_env() non-null): faults can be injected.
  bool fault_injection = false;
  // make() gives targets on the real disk (storage_env() is Env::Posix()) whose processes run
  // under the storage recorder (storage_recorder() non-null): crash states are built from what
  // they did, and storage faults injected into them (P13, P14); corruption of their files (P16).
  bool disk_faults = false;
  // Why disk_faults is false for a target on the real disk (e.g. the interposer is missing);
  // reported where those properties are not applicable.
  std::string disk_faults_missing;
  // What the run expects of the target: false, every property passes (or is n/a); true, the target
  // is a mutant that at least one property must kill (`ckptspec run` exits 0 only when every
  // selected target meets its expectation).
  bool expect_killed = false;
  // The most ranks a case may have on this target (0: no limit): a pool of N launched ranks
  // serves worlds of at most N. The property runner caps the generated layouts at it
  // (generators/world_cap.h).
  int max_world_size = 0;
  std::function<std::unique_ptr<TargetUnderTest>(const TargetOptions&)> make;
  // A framework target (docs/PROTOCOL.md, "Framework adapters") instead: make_framework gives a
  // fresh framework under test (with storage of its own) and `framework` says what it can be
  // asked; `make` is then empty, and only the properties' framework forms run on it.
  std::optional<FrameworkSupport> framework;
  std::function<std::unique_ptr<FrameworkUnderTest>(const TargetOptions&)> make_framework;
  bool is_framework() const { return static_cast<bool>(make_framework); }
};

}  // namespace ckptspec
