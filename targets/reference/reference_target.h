// The reference target: the canonical framework layer and the reference engine on an Env.
// Mutants (targets/mutants/) are this target with one deviation: they pass their own framework
// layer or engine options (e.g. a plan cache) through ReferenceTargetParts.
#pragma once

#include <memory>
#include <string>

#include "targets/reference/reference_engine.h"
#include "targets/target.h"

namespace ckptspec {

struct ReferenceTargetParts {
  std::string name = "reference";
  // Null: CanonicalFramework.
  std::unique_ptr<FrameworkLayer> framework;
  // env and root must be set; plan_cache null means the reference PlanCache.
  ReferenceOptions engine;
};

class ReferenceTarget : public Target {
 public:
  explicit ReferenceTarget(ReferenceTargetParts parts);

  std::string name() const override { return name_; }
  const FrameworkLayer& framework() const override { return *framework_; }
  Engine& engine() override { return *engine_; }
  ReferenceEngine& reference_engine() { return *engine_; }

 private:
  std::string name_;
  std::unique_ptr<FrameworkLayer> framework_;
  std::unique_ptr<ReferenceEngine> engine_;
};

}  // namespace ckptspec
