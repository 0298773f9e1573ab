// An in-process engine wrapper (docs/PLUGINS.md, example 3): an Engine of the plugin's own that
// forwards every call to the engine it wraps -- here the reference engine, in a real plugin the
// framework's own checkpointer -- and, as many checkpointers do, records the wall-clock time of
// each save in the checkpoint's metadata. It is correct, but two saves of one state are no longer
// byte-identical: P17 (determinism) fails, which the plugin declares as an expected failure.
#include <chrono>

#include "examples.h"
#include "targets/reference/reference_factory.h"

namespace example {
namespace {

class TimestampingEngine : public ckptspec::Engine {
 public:
  explicit TimestampingEngine(std::unique_ptr<ckptspec::Engine> wrapped)
      : wrapped_(std::move(wrapped)) {}
  ckptspec::Capabilities capabilities() const override { return wrapped_->capabilities(); }
  ckptspec::Status Save(int64_t iteration, ckptspec::SaveInput input,
                        const ckptspec::SaveOptions& options) override {
    ckptspec::SaveOptions stamped = options;
    stamped.layout["saved_at_ns"] = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count();
    return wrapped_->Save(iteration, std::move(input), stamped);
  }
  ckptspec::Status Finalize() override { return wrapped_->Finalize(); }
  ckptspec::Status Poll(bool* complete) override { return wrapped_->Poll(complete); }
  ckptspec::Status Load(ckptspec::LoadRequest request, ckptspec::LoadResult* result) override {
    return wrapped_->Load(std::move(request), result);
  }

 private:
  std::unique_ptr<ckptspec::Engine> wrapped_;
};

}  // namespace

ckptspec::TargetFactory TimestampingEngineTarget() {
  return ckptspec::EngineTargetFactory(
      "timestamping-engine",
      [](ckptspec::Env* env, const std::string& root, const ckptspec::TargetOptions& options) {
        return std::make_unique<TimestampingEngine>(std::make_unique<ckptspec::ReferenceEngine>(
            ckptspec::ReferenceOptionsFor(env, root, options)));
      });
}

}  // namespace example
