#include "targets/reference/reference_factory.h"

#include <memory>
#include <utility>

#include "base/mem_env.h"

namespace ckptspec {

namespace {

// Makes the target of process `process` (0 for the first) over the storage of a target under
// test.
using MakeTarget = std::function<std::unique_ptr<Target>(MemEnv* env, const char* root,
                                                         const TargetOptions&, int process)>;

// A target on a MemEnv of its own, made again by `make` for every new process.
class MemEnvUnderTest : public TargetUnderTest {
 public:
  MemEnvUnderTest(MakeTarget make, const TargetOptions& options)
      : make_(std::move(make)), options_(options) {
    // On a fresh MemEnv these do not fail; if they did, the first save would fail naming the root.
    env_.CreateDir(kRoot).IgnoreError();
    env_.SyncDir("/").IgnoreError();
    env_.ResetOpCount();
    target_ = make_(&env_, kRoot, options_, process_);
  }
  Target& target() override { return *target_; }
  MemEnv* mem_env() override { return &env_; }
  std::string root() const override { return kRoot; }
  void NewProcess() override {
    target_.reset();
    target_ = make_(&env_, kRoot, options_, ++process_);
  }

 private:
  static constexpr const char* kRoot = "/ckpt";
  MakeTarget make_;
  TargetOptions options_;
  int process_ = 0;  // the ordinal of the current process over env_
  MemEnv env_;       // declared before the target, destroyed after it
  std::unique_ptr<Target> target_;
};

TargetFactory MemEnvTargetFactory(const std::string& name, MakeTarget make) {
  TargetFactory factory;
  factory.name = name;
  factory.make = [make](const TargetOptions& options) -> std::unique_ptr<TargetUnderTest> {
    return std::make_unique<MemEnvUnderTest>(make, options);
  };
  factory.capabilities = factory.make(TargetOptions())->target().engine().capabilities();
  factory.fault_injection = true;
  return factory;
}

TargetFactory UnderTestFactory(const std::string& name, IndexLayout layout, MakeParts replaced) {
  return MemEnvTargetFactory(
      name, [name, layout, replaced](MemEnv* env, const char* root, const TargetOptions& options,
                                     int process) {
        ReferenceOptions engine = ReferenceOptionsFor(env, root, options);
        engine.index_layout = layout;
        return std::make_unique<ReferenceTarget>(name, std::move(engine),
                                                 replaced ? replaced(process) : ReplacedParts());
      });
}

// The canonical framework and an engine of the caller's.
class EngineTarget : public Target {
 public:
  EngineTarget(std::string name, std::unique_ptr<Engine> engine)
      : name_(std::move(name)), engine_(std::move(engine)) {}
  std::string name() const override { return name_; }
  const FrameworkLayer& framework() const override { return framework_; }
  Engine& engine() override { return *engine_; }

 private:
  std::string name_;
  CanonicalFramework framework_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace

TargetFactory ReferenceTargetFactory(IndexLayout layout) {
  return UnderTestFactory(layout == IndexLayout::kSingle ? "reference" : "reference-per-writer",
                          layout, nullptr);
}

TargetFactory ReplacedPartsTargetFactory(const std::string& name, MakeParts replaced) {
  return UnderTestFactory(name, IndexLayout::kSingle, std::move(replaced));
}

ReferenceOptions ReferenceOptionsFor(Env* env, const std::string& root,
                                     const TargetOptions& options) {
  ReferenceOptions engine;
  engine.env = env;
  engine.root = root;
  engine.keep_last = options.keep_last;
  engine.max_async_in_flight = options.max_async_in_flight;
  engine.async_execution =
      options.deferred_async ? AsyncExecution::kDeferred : AsyncExecution::kThread;
  return engine;
}

TargetFactory EngineTargetFactory(const std::string& name, MakeEngine make_engine) {
  return MemEnvTargetFactory(
      name, [name, make_engine](MemEnv* env, const char* root, const TargetOptions& options,
                                int /*process*/) {
        return std::make_unique<EngineTarget>(name, make_engine(env, root, options));
      });
}

}  // namespace ckptspec
