// B30 async-retention-at-schedule. Upstream: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/4678;
// the same class with saves overlapping: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/5184.
//
// Mechanism: with async_save and most_recent_k=1, Megatron-Bridge ran the retention pass right
// after scheduling a persistent async save. The new iter_* directory exists as soon as the save is
// prepared, so the pass kept that numerically newest, still incomplete directory and removed the
// older checkpoint the tracker (latest_train_state.pt) still selected; a crash, a preemption or a
// failed write before the new save finalized left no complete checkpoint to resume. The fix runs
// async retention as a finalizer, after the tracker update. The mutant engine's AsyncSaveScheduled
// step runs retention there, counting the scheduled save's iteration among the iteration
// directories and removing every one outside the keep_last newest (durably, as the reference
// removes: renamed to iter_N.deleting, then deleted), the tracker's included; its ApplyRetention
// step does nothing in an async save's write (save_context()), where the reference's runs. Sync
// saves keep the reference's retention. Silent until a crash or a failed async save.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>

#include "targets/mutants/mutant_target.h"

namespace ckptspec {
namespace {

class RetentionAtScheduleEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;

 protected:
  Status ApplyRetention() override {
    if (save_context().async) return Status::OK();  // it ran when the save was scheduled
    return ReferenceEngine::ApplyRetention();
  }

  void AsyncSaveScheduled(int64_t iteration, const SaveOptions& options) override {
    ReferenceEngine::AsyncSaveScheduled(iteration, options);
    // A removal that fails is left to the next pass, as the upstream cleanup leaves it.
    KeepNewestCountingScheduled(iteration).IgnoreError();
  }

 private:
  Status KeepNewestCountingScheduled(int64_t scheduled) {
    const int keep_last = options().keep_last;
    if (keep_last <= 0) return Status::OK();
    std::vector<int64_t> iterations;
    CKPTSPEC_RETURN_IF_ERROR(ListIterations(&iterations));
    iterations.push_back(scheduled);  // upstream, its directory exists from the start
    std::sort(iterations.begin(), iterations.end(), std::greater<int64_t>());
    iterations.erase(std::unique(iterations.begin(), iterations.end()), iterations.end());
    std::vector<int64_t> victims;
    for (size_t i = static_cast<size_t>(keep_last); i < iterations.size(); ++i) {
      if (iterations[i] != scheduled) victims.push_back(iterations[i]);
    }
    if (victims.empty()) return Status::OK();
    for (int64_t it : victims) {
      CKPTSPEC_RETURN_IF_ERROR(env()->RenameFile(JoinPath(root(), IterationDirName(it)),
                                                 JoinPath(root(), DeletingDirName(it))));
    }
    CKPTSPEC_RETURN_IF_ERROR(env()->SyncDir(root()));
    for (int64_t it : victims) {
      CKPTSPEC_RETURN_IF_ERROR(env()->RemoveTree(JoinPath(root(), DeletingDirName(it))));
    }
    return env()->SyncDir(root());
  }
};

}  // namespace

ReplacedParts B30Parts(int /*process*/) { return EngineParts<RetentionAtScheduleEngine>(); }

}  // namespace ckptspec
