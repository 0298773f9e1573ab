// The spec's own framework as a framework under test in process: a SpecJob (spec_job.h) whose
// storage is a target under test from a factory (the reference's, or a mutant's: its framework
// layer, plan cache and engine are what the job saves and loads through). The framework
// properties run on it in their own tests, where the reference must pass and the framework-level
// mutants must be killed.
//
// Contracts:
//  - SpecFramework: as FrameworkUnderTest's; NewProcess is the target's (a fresh framework and
//    engine over the same storage) and forgets the job.
//  - SpecFrameworkFactory(storage): a framework target named like `storage` (with its
//    capabilities and expectation), each made framework on a fresh target of `storage`;
//    SpecFrameworkSupport() is what it declares.
#pragma once

#include <memory>

#include "model/framework_support.h"
#include "harness/spec_job.h"
#include "targets/target_factory.h"

namespace ckptspec {

class SpecFramework : public FrameworkUnderTest {
 public:
  explicit SpecFramework(std::unique_ptr<TargetUnderTest> target) : target_(std::move(target)) {}

  Status Build(const FrameworkJob& job) override { return job_.Build(job); }
  Status Train(int64_t steps, bool fault, TrainResult* result) override {
    return job_.Train(steps, fault, result);
  }
  Status Save(bool async, FrameworkSaveResult* result) override {
    return job_.Save(target_->target(), async, result);
  }
  Status Finalize() override { return target_->target().engine().Finalize(); }
  Status Load(const FrameworkLoad& load, int64_t* iteration) override {
    return job_.Load(target_->target(), load, iteration);
  }
  Status Observe(Observation* out) override { return job_.Observe(out); }
  void NewProcess() override {
    target_->NewProcess();
    job_ = SpecJob();
  }

 private:
  std::unique_ptr<TargetUnderTest> target_;
  SpecJob job_;
};

// What the spec's framework can be asked: every layout the spec models up to 8 ranks and 2
// modules, every model feature, dtype, optimizer feature, format, load flag and rerun mode;
// signatures.
FrameworkSupport SpecFrameworkSupport();

TargetFactory SpecFrameworkFactory(const TargetFactory& storage);

}  // namespace ckptspec
