// B09 nvrx-stale-ipc-cache. Upstream: https://github.com/NVIDIA-NeMo/RL/issues/3312,
// https://github.com/NVIDIA/nvidia-resiliency-ext/pull/314.
//
// Mechanism: with ckpt_assume_constant_structure the persistent NVRx async writer cached the CUDA
// IPC tensor handles keyed only on the logical structure; colocated offload reallocated the
// storage, so every later save re-wrote the FIRST save's weights and optimizer state (checkpoints
// at steps 90/110/120 bit-identical). The mutant engine's StageAsyncSave step (the
// reference copies every byte) keeps, under assume_constant_structure, the staged tensor data of
// the first save keyed by StructureFingerprint alone; a later async save with the same fingerprint
// stages the cached bytes instead of its own (objects and common state are re-pickled, as NVRx
// does). The fix fingerprints storage too.
// Silent.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/mutant_target.h"

namespace ckptspec {
namespace {

class StructureKeyedStagingEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;

 protected:
  Status StageAsyncSave(const SaveInput& input, const SaveOptions& options,
                        std::vector<ShardedStateDict>* staged) override {
    CKPTSPEC_RETURN_IF_ERROR(ReferenceEngine::StageAsyncSave(input, options, staged));
    if (!options.assume_constant_structure) return Status::OK();
    const std::vector<ShardedStateDict>& every_rank = input.every_rank();
    const uint64_t fingerprint = StructureFingerprint(every_rank);
    if (!cached_ || fingerprint != fingerprint_) {
      cached_ = true;
      fingerprint_ = fingerprint;
      cache_.clear();
      for (const ShardedStateDict& d : every_rank) {
        cache_.emplace_back();
        for (const ShardedTensor& t : d.tensors) cache_.back().push_back(t.data);
      }
      return Status::OK();
    }
    for (size_t r = 0; r < staged->size(); ++r) {  // the cached handles point at old storage
      for (size_t i = 0; i < (*staged)[r].tensors.size(); ++i) {
        (*staged)[r].tensors[i].data = cache_[r][i];
      }
    }
    return Status::OK();
  }

 private:
  bool cached_ = false;
  uint64_t fingerprint_ = 0;
  std::vector<std::vector<std::vector<uint8_t>>> cache_;  // [rank][tensor] bytes
};

}  // namespace

ReplacedParts B09Parts(int /*process*/) { return EngineParts<StructureKeyedStagingEngine>(); }

}  // namespace ckptspec
