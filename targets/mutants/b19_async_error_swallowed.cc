// B19 async-error-swallowed. Upstream: https://github.com/google/orbax/issues/605 (PR #606);
// keras #23609.
//
// Mechanism: a background save failure (a barrier timeout on slow storage) never reached the
// main thread; the next save then failed deleting a checkpoint that had never been created, and
// keras' on_train_end swallowed close() errors so the final checkpoint was silently absent.
// The reference engine's ReportAsyncSave step turns the background save's status into what
// Finalize, and so the next Save or Load (which finalize first), returns (target.h). The mutant
// overrides that one step to return OK: the future's exception is never fetched.
// Silent: the tracker still names the previous checkpoint (or none).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/mutant_target.h"

namespace ckptspec {
namespace {

class ErrorSwallowingEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;

 protected:
  Status ReportAsyncSave(int64_t /*iteration*/, Status /*status*/) override { return Status::OK(); }
};

}  // namespace

ReplacedParts B19Parts(int /*process*/) { return EngineParts<ErrorSwallowingEngine>(); }

}  // namespace ckptspec
