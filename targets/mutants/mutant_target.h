// The scaffolding every mutant of the catalog (docs/BUGS.md B01-B20, docs/DESIGN.md §7) is built from: the
// reference target with its own deviation in one or two parts -- its framework layer (a
// CanonicalFramework subclass that overrides a method), its plan cache, or its engine (a
// ReferenceEngine subclass); B04 replaces both the plan cache and the framework layer.
//
// Contracts:
//  - MutantParts leaves every part it does not set as the reference's.
//  - BuildMutantTarget makes the target on `env` under `root` (the engine creates it on the first
//    save); `env` must outlive the target.
//  - MutantTargetFactory makes independent targets on a fresh MemEnv each (fault injection works,
//    like the reference's factory in properties/harness.h), expected to be killed
//    (TargetFactory::expect_killed); NewProcess builds fresh parts over the same storage.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "properties/harness.h"
#include "targets/env/env.h"
#include "targets/reference/reference_engine.h"
#include "targets/target.h"

namespace ckptspec {

struct MutantParts {
  // Null: CanonicalFramework.
  std::unique_ptr<FrameworkLayer> framework;
  // Null: the reference PlanCache.
  std::unique_ptr<PlanCache> plan_cache;
  // Null: a ReferenceEngine; else builds the (subclassed) engine from the options.
  std::function<std::unique_ptr<ReferenceEngine>(ReferenceOptions)> engine;
};

// A target made of a framework layer and a reference engine (or a subclass of it).
class MutantTarget : public Target {
 public:
  MutantTarget(std::string name, std::unique_ptr<FrameworkLayer> framework,
               std::unique_ptr<ReferenceEngine> engine)
      : name_(std::move(name)), framework_(std::move(framework)), engine_(std::move(engine)) {}
  std::string name() const override { return name_; }
  const FrameworkLayer& framework() const override { return *framework_; }
  Engine& engine() override { return *engine_; }
  ReferenceEngine& reference_engine() { return *engine_; }

 private:
  std::string name_;
  std::unique_ptr<FrameworkLayer> framework_;
  std::unique_ptr<ReferenceEngine> engine_;
};

std::unique_ptr<MutantTarget> BuildMutantTarget(const std::string& name, MutantParts parts, Env* env,
                                                const std::string& root,
                                                AsyncExecution async = AsyncExecution::kDeferred,
                                                int keep_last = 0);

TargetFactory MutantTargetFactory(const std::string& name, std::function<MutantParts()> parts);

}  // namespace ckptspec
