#include "targets/mutants/mutant_target.h"

#include "targets/env/mem_env.h"

namespace ckptspec {

std::unique_ptr<MutantTarget> BuildMutantTarget(const std::string& name, MutantParts parts, Env* env,
                                                const std::string& root, AsyncExecution async,
                                                int keep_last) {
  ReferenceOptions options;
  options.env = env;
  options.root = root;
  options.keep_last = keep_last;
  options.async_execution = async;
  options.plan_cache = std::move(parts.plan_cache);
  std::unique_ptr<ReferenceEngine> engine =
      parts.engine ? parts.engine(std::move(options)) : std::make_unique<ReferenceEngine>(std::move(options));
  std::unique_ptr<FrameworkLayer> framework =
      parts.framework ? std::move(parts.framework) : std::make_unique<CanonicalFramework>();
  return std::make_unique<MutantTarget>(name, std::move(framework), std::move(engine));
}

namespace {

class MutantUnderTest : public TargetUnderTest {
 public:
  MutantUnderTest(std::string name, std::function<MutantParts()> parts, const TargetOptions& options)
      : name_(std::move(name)), parts_(std::move(parts)), options_(options) {
    env_.CreateDir(kRoot);
    env_.SyncDir("/");
    env_.ResetOpCount();
    StartProcess();
  }
  Target& target() override { return *target_; }
  MemEnv* mem_env() override { return &env_; }
  std::string root() const override { return kRoot; }
  // A new process of the same mutant: fresh parts (the deviation itself is code, so it persists;
  // whatever a part cached in memory does not).
  void NewProcess() override {
    target_.reset();
    StartProcess();
  }

 private:
  void StartProcess() {
    target_ = BuildMutantTarget(name_, parts_(), &env_, kRoot,
                                options_.deferred_async ? AsyncExecution::kDeferred : AsyncExecution::kThread,
                                options_.keep_last);
  }

  static constexpr const char* kRoot = "/ckpt";
  std::string name_;
  std::function<MutantParts()> parts_;
  TargetOptions options_;
  MemEnv env_;  // declared before the target, destroyed after it
  std::unique_ptr<MutantTarget> target_;
};

}  // namespace

TargetFactory MutantTargetFactory(const std::string& name, std::function<MutantParts()> parts) {
  TargetFactory factory;
  factory.name = name;
  factory.make = [name, parts](const TargetOptions& options) -> std::unique_ptr<TargetUnderTest> {
    return std::make_unique<MutantUnderTest>(name, parts, options);
  };
  factory.capabilities = factory.make(TargetOptions())->target().engine().capabilities();
  factory.fault_injection = true;
  factory.expect_killed = true;
  return factory;
}

}  // namespace ckptspec
