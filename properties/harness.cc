#include "properties/harness.h"

#include <sstream>

#include "targets/reference/reference_target.h"

namespace ckptspec {

namespace {

// The reference target's name for each index layout (the factory's and the target's).
const char* ReferenceName(IndexLayout layout) {
  return layout == IndexLayout::kSingle ? "reference" : "reference-per-writer";
}

class ReferenceUnderTest : public TargetUnderTest {
 public:
  ReferenceUnderTest(const TargetOptions& options, IndexLayout layout)
      : options_(options), layout_(layout) {
    env_.CreateDir(kRoot);
    env_.SyncDir("/");
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
    ReferenceTargetParts parts;
    parts.engine.env = &env_;
    parts.engine.root = kRoot;
    parts.engine.keep_last = options_.keep_last;
    parts.engine.index_layout = layout_;
    parts.name = ReferenceName(layout_);
    parts.engine.async_execution =
        options_.deferred_async ? AsyncExecution::kDeferred : AsyncExecution::kThread;
    target_ = std::make_unique<ReferenceTarget>(std::move(parts));
  }

  static constexpr const char* kRoot = "/ckpt";
  TargetOptions options_;
  IndexLayout layout_;
  MemEnv env_;  // declared before the target, destroyed after it
  std::unique_ptr<ReferenceTarget> target_;
};

}  // namespace

TargetFactory ReferenceTargetFactory(IndexLayout layout) {
  TargetFactory factory;
  factory.name = ReferenceName(layout);
  factory.make = [layout](const TargetOptions& options) -> std::unique_ptr<TargetUnderTest> {
    return std::make_unique<ReferenceUnderTest>(options, layout);
  };
  factory.capabilities = factory.make(TargetOptions())->target().engine().capabilities();
  factory.fault_injection = true;
  return factory;
}

Status SaveRun(Target& target, const RunSpec& run, const std::vector<TrainingState>& states,
               int64_t iteration, const SaveOptions& options) {
  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RETURN_IF_ERROR(
      target.framework().ToStateDicts(run.layout, states, run.sharding, &dicts).WithContext("framework"));
  return target.engine().Save(iteration, dicts, options);
}

Status ResumeRun(Target& target, const RunSpec& run, const ResumeOptions& options,
                 std::vector<TrainingState>* states, CheckpointInfo* info) {
  // Read the common state first: one empty template per rank requests no key.
  LoadRequest probe;
  probe.iteration = options.iteration;
  probe.templates.resize(run.layout.world_size());
  LoadResult probed;
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Load(std::move(probe), &probed));
  if (probed.state.empty()) return Status::Corruption("the engine returned no common state");
  CheckpointInfo saved;
  CKPTSPEC_RETURN_IF_ERROR(
      target.framework().ReadCheckpointInfo(probed.state[0].common, &saved).WithContext("framework"));
  LoadRequest request;
  request.iteration = probed.iteration;
  request.strict = options.strict;
  CKPTSPEC_RETURN_IF_ERROR(target.framework()
                               .LoadTemplates(run.layout, run.configs, saved, options.flags,
                                              &request.templates)
                               .WithContext("framework"));
  LoadResult loaded;
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Load(std::move(request), &loaded));
  CKPTSPEC_RETURN_IF_ERROR(target.framework()
                               .FromStateDicts(loaded.state, run.layout, run.configs,
                                               options.flags, states)
                               .WithContext("framework"));
  if (info) *info = std::move(saved);
  return Status::OK();
}

}  // namespace ckptspec
