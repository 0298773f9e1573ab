// A target whose engine is an adapter process group (ProcessEngine) and whose framework layer is
// the canonical one: adapters are storage engines receiving per-rank sharded state dicts
// (docs/PROTOCOL.md).
#pragma once

#include <memory>
#include <string>

#include "targets/process/process_engine.h"
#include "targets/target.h"

namespace ckptspec {

class ProcessTarget : public Target {
 public:
  ProcessTarget(std::string name, ProcessEngineOptions options)
      : name_(std::move(name)), engine_(std::make_unique<ProcessEngine>(std::move(options))) {}

  std::string name() const override { return name_; }
  const FrameworkLayer& framework() const override { return framework_; }
  Engine& engine() override { return *engine_; }
  ProcessEngine& process_engine() { return *engine_; }

 private:
  std::string name_;
  CanonicalFramework framework_;
  std::unique_ptr<ProcessEngine> engine_;
};

}  // namespace ckptspec
