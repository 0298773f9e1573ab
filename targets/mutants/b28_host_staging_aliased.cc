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
// (SaveInput::shared) next to its copy, and its WriteShardFiles step, when it writes that async
// save, takes every host-placed tensor's bytes from the caller's dicts as they are then. Device
// tensors and sync saves are the reference's. Silent.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/b28_host_staging_aliased.h"

#include <memory>
#include <utility>

namespace ckptspec {
namespace {

class HostAliasingStagingEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;

 protected:
  Status StageAsyncSave(const SaveInput& input, const SaveOptions& options,
                        std::vector<ShardedStateDict>* staged) override {
    CKPTSPEC_RETURN_IF_ERROR(ReferenceEngine::StageAsyncSave(input, options, staged));
    aliased_ = std::make_unique<SaveInput>(input);
    staged_ = staged;
    return Status::OK();
  }

  Status WriteShardFiles(const std::string& staging,
                         const std::vector<ShardedStateDict>& every_rank, const SavePlan& plan,
                         CheckpointMetadata* out) override {
    if (&every_rank != staged_ || !aliased_) {
      return ReferenceEngine::WriteShardFiles(staging, every_rank, plan, out);
    }
    std::unique_ptr<SaveInput> input = std::move(aliased_);
    staged_ = nullptr;
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
  std::unique_ptr<SaveInput> aliased_;  // the pending async save's input, as the caller has it
  const std::vector<ShardedStateDict>* staged_ = nullptr;  // that save's staged copy
};

}  // namespace

ReplacedParts B28Parts() {
  ReplacedParts parts;
  parts.engine = [](ReferenceOptions options) -> std::unique_ptr<ReferenceEngine> {
    return std::make_unique<HostAliasingStagingEngine>(std::move(options));
  };
  return parts;
}

}  // namespace ckptspec
