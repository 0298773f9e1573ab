// The reference target: the canonical framework layer and the reference engine on an Env, with the
// reference's consolidated export over that engine. A mutant (targets/mutants/, docs/DESIGN.md §7)
// is the same target with some of its parts replaced: its framework layer, its plan cache, its
// engine or its export. The reference is it with none replaced.
//
// Contracts:
//  - ReplacedParts leaves every part it does not set as the reference's: CanonicalFramework, the
//    plan cache ReferenceOptions names (the reference PlanCache when that is null), a
//    ReferenceEngine, and a ReferenceExport of that engine.
//  - The engine works on engine.env under engine.root (both must be set; the env outlives the
//    target; the engine creates the root on the first save).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "targets/reference/checkpoint_export.h"
#include "targets/reference/reference_engine.h"
#include "targets/target.h"

namespace ckptspec {

struct ReplacedParts {
  // Null: CanonicalFramework.
  std::unique_ptr<FrameworkLayer> framework;
  // Null: the plan cache of the engine's options.
  std::unique_ptr<PlanCache> plan_cache;
  // Null: a ReferenceEngine; else builds the (subclassed) engine from the options.
  std::function<std::unique_ptr<ReferenceEngine>(ReferenceOptions)> engine;
  // Null: a ReferenceExport; else builds the (subclassed) export over the target's engine.
  std::function<std::unique_ptr<ReferenceExport>(ReferenceEngine*)> checkpoint_export;
};

// Makes the parts of one process of a target. `process` is that process's ordinal over the
// target's storage: 0 for the first, one more for every new process after it. A part that differs
// from one process to the next (an order that holds only within a process) derives it from
// `process`, never from how many parts were made before in the OS process: a run's report must
// not depend on which worker ran what.
using MakeParts = std::function<ReplacedParts(int process)>;

class ReferenceTarget : public Target {
 public:
  ReferenceTarget(std::string name, ReferenceOptions engine,
                  ReplacedParts replaced = ReplacedParts());

  std::string name() const override { return name_; }
  const FrameworkLayer& framework() const override { return *framework_; }
  Engine& engine() override { return *engine_; }
  CheckpointExport* checkpoint_export() override { return export_.get(); }
  ReferenceEngine& reference_engine() { return *engine_; }

 private:
  std::string name_;
  std::unique_ptr<FrameworkLayer> framework_;
  std::unique_ptr<ReferenceEngine> engine_;
  std::unique_ptr<ReferenceExport> export_;  // over engine_
};

}  // namespace ckptspec
