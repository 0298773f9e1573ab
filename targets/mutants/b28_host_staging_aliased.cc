// B28 host-staging-aliased. Upstream: https://github.com/pytorch/pytorch/issues/144657 (fixed by
// https://github.com/pytorch/pytorch/pull/145408); the same class in nvidia-resiliency-ext PR #376
// and Lightning PR #21079 (issue #20953).
//
// Mechanism: DCP's async_save staged the state dict with an offload-to-CPU helper, which copies a
// device tensor into host memory and returns a host tensor unchanged. A model or optimizer state
// already on the host (a CPU run, a CPU-offloaded optimizer) was therefore not copied: the
// background write read the trainer's live tensor, and the optimizer steps taken between
// async_save and the write reached the checkpoint (the script saved 1.0 and found the
// value of a later step). The mutant engine's StageAsyncSave step keeps the caller's dicts
// (SaveInput::shared) next to its copy, and its WriteShardFiles step, when it runs in an async
// save's write (save_context()), takes every host-placed tensor's bytes from that save's caller's
// dicts as they are then. Device tensors and sync saves are the reference's. Silent.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "targets/mutants/mutant_target.h"

namespace ckptspec {
namespace {

class HostAliasingStagingEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;

 protected:
  Status StageAsyncSave(const SaveInput& input, const SaveOptions& options,
                        std::vector<ShardedStateDict>* staged) override {
    CKPTSPEC_RETURN_IF_ERROR(ReferenceEngine::StageAsyncSave(input, options, staged));
    const std::lock_guard<std::mutex> lock(mutex_);
    aliased_.emplace_back(save_context().iteration, input);
    return Status::OK();
  }

  Status WriteShardFiles(const std::string& staging,
                         const std::vector<ShardedStateDict>& every_rank, const SavePlan& plan,
                         CheckpointMetadata* out) override {
    const SaveContext& save = save_context();
    std::optional<SaveInput> input;
    if (save.side == SaveContext::Side::kWriter) input = TakeAliased(save.iteration);
    if (!input) return ReferenceEngine::WriteShardFiles(staging, every_rank, plan, out);
    const std::vector<ShardedStateDict>& live = input->every_rank();
    std::vector<ShardedStateDict> written = every_rank;
    for (size_t r = 0; r < written.size() && r < live.size(); ++r) {
      for (size_t i = 0; i < written[r].tensors.size() && i < live[r].tensors.size(); ++i) {
        if (input->placement(r, i) != Placement::kHost) continue;
        if (live[r].tensors[i].data.size() != written[r].tensors[i].data.size()) continue;
        written[r].tensors[i].data = live[r].tensors[i].data;  // the live tensor, not a copy
      }
    }
    return ReferenceEngine::WriteShardFiles(staging, written, plan, out);
  }

 private:
  // The input of the oldest scheduled async save of `iteration`, as the caller has it. Writes run
  // in schedule order, so the entries before it are of saves whose write ended earlier.
  std::optional<SaveInput> TakeAliased(int64_t iteration) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = aliased_.begin(); it != aliased_.end(); ++it) {
      if (it->first != iteration) continue;
      std::optional<SaveInput> input(std::move(it->second));
      aliased_.erase(aliased_.begin(), it + 1);
      return input;
    }
    return std::nullopt;
  }

  std::mutex mutex_;  // the caller stages while the background thread writes
  // The scheduled async saves' inputs, as the caller has them, in schedule order.
  std::deque<std::pair<int64_t, SaveInput>> aliased_;
};

}  // namespace

ReplacedParts B28Parts(int /*process*/) { return EngineParts<HostAliasingStagingEngine>(); }

}  // namespace ckptspec
