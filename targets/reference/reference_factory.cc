#include "targets/reference/reference_factory.h"

#include <memory>
#include <utility>

#include "targets/env/mem_env.h"

namespace ckptspec {

namespace {

// The reference target on a MemEnv of its own; `replaced` null: no part replaced.
class ReferenceUnderTest : public TargetUnderTest {
 public:
  ReferenceUnderTest(std::string name, IndexLayout layout, std::function<ReplacedParts()> replaced,
                     const TargetOptions& options)
      : name_(std::move(name)), layout_(layout), replaced_(std::move(replaced)), options_(options) {
    // On a fresh MemEnv these do not fail; if they did, the first save would fail naming the root.
    env_.CreateDir(kRoot).IgnoreError();
    env_.SyncDir("/").IgnoreError();
    env_.ResetOpCount();
    StartProcess();
  }
  Target& target() override { return *target_; }
  MemEnv* mem_env() override { return &env_; }
  std::string root() const override { return kRoot; }
  void NewProcess() override {
    target_.reset();
    StartProcess();
  }

 private:
  void StartProcess() {
    ReferenceOptions engine;
    engine.env = &env_;
    engine.root = kRoot;
    engine.keep_last = options_.keep_last;
    engine.index_layout = layout_;
    engine.async_execution =
        options_.deferred_async ? AsyncExecution::kDeferred : AsyncExecution::kThread;
    target_ = std::make_unique<ReferenceTarget>(name_, std::move(engine),
                                                replaced_ ? replaced_() : ReplacedParts());
  }

  static constexpr const char* kRoot = "/ckpt";
  std::string name_;
  IndexLayout layout_;
  std::function<ReplacedParts()> replaced_;
  TargetOptions options_;
  MemEnv env_;  // declared before the target, destroyed after it
  std::unique_ptr<ReferenceTarget> target_;
};

TargetFactory UnderTestFactory(const std::string& name, IndexLayout layout,
                               std::function<ReplacedParts()> replaced) {
  TargetFactory factory;
  factory.name = name;
  factory.make = [name, layout,
                  replaced](const TargetOptions& options) -> std::unique_ptr<TargetUnderTest> {
    return std::make_unique<ReferenceUnderTest>(name, layout, replaced, options);
  };
  factory.capabilities = factory.make(TargetOptions())->target().engine().capabilities();
  factory.fault_injection = true;
  return factory;
}

}  // namespace

TargetFactory ReferenceTargetFactory(IndexLayout layout) {
  return UnderTestFactory(layout == IndexLayout::kSingle ? "reference" : "reference-per-writer",
                          layout, nullptr);
}

TargetFactory ReplacedPartsTargetFactory(const std::string& name,
                                         std::function<ReplacedParts()> replaced) {
  return UnderTestFactory(name, IndexLayout::kSingle, std::move(replaced));
}

}  // namespace ckptspec
