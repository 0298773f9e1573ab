// B19 async-error-swallowed. Upstream: https://github.com/google/orbax/issues/605 (PR #606);
// keras #23609.
//
// Mechanism: a background save failure (a barrier timeout on slow storage) never reached the
// main thread; the next save then failed deleting a checkpoint that had never been created, and
// keras' on_train_end swallowed close() errors so the final checkpoint was silently absent.
// The reference engine returns a pending async save's error from Finalize, or from the next
// Save/Load, which finalize first (target.h). The mutant engine finalizes too but drops the
// status: Finalize() always returns OK, and Save/Load finalize (discarding the error) before
// proceeding. Silent: the tracker still names the previous checkpoint (or none).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/b19_async_error_swallowed.h"

namespace ckptspec {
namespace {

class ErrorSwallowingEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;
  Status Save(int64_t iteration, const std::vector<ShardedStateDict>& every_rank,
              const SaveOptions& options) override {
    (void)ReferenceEngine::Finalize();  // the future's exception is never fetched
    return ReferenceEngine::Save(iteration, every_rank, options);
  }
  Status Finalize() override {
    (void)ReferenceEngine::Finalize();
    return Status::OK();
  }
  Status Load(LoadRequest request, LoadResult* result) override {
    (void)ReferenceEngine::Finalize();
    return ReferenceEngine::Load(std::move(request), result);
  }
};

}  // namespace

ReplacedParts B19Parts() {
  ReplacedParts parts;
  parts.engine = [](ReferenceOptions options) -> std::unique_ptr<ReferenceEngine> {
    return std::make_unique<ErrorSwallowingEngine>(std::move(options));
  };
  return parts;
}

}  // namespace ckptspec
