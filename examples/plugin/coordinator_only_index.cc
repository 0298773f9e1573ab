// An engine-step mutant (docs/PLUGINS.md, example 2): the reference engine with one step
// replaced. In the write of an async save (the step asks save_context()), its WriteIndex step
// records only what the coordinator (rank 0) wrote: the other ranks' shard files are written and
// committed, but the index does not know them -- as a checkpointer does whose coordinator writes
// the global metadata in the async save's finalize step from its own results, before it has
// gathered every rank's. A resume of such a checkpoint misses every entry another rank saved;
// sync saves are the reference's. P1, P13 and P14 kill it in any run of more than one writing
// rank that saves asynchronously.
#include "examples.h"
#include "targets/mutants/mutant_target.h"

namespace example {
namespace {

class CoordinatorOnlyIndexEngine : public ckptspec::ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;

 protected:
  ckptspec::Status WriteIndex(const std::string& staging,
                              const ckptspec::CheckpointMetadata& m) override {
    if (!save_context().async) return ReferenceEngine::WriteIndex(staging, m);
    ckptspec::CheckpointMetadata coordinator = m;
    coordinator.tensors.clear();
    for (const ckptspec::TensorEntry& t : m.tensors) {
      ckptspec::TensorEntry mine{t.key, t.dtype, t.global_shape, {}};
      for (const ckptspec::ChunkEntry& c : t.chunks) {
        if (c.rank == 0) mine.chunks.push_back(c);
      }
      if (!mine.chunks.empty()) coordinator.tensors.push_back(std::move(mine));
    }
    coordinator.objects.clear();
    for (const ckptspec::ObjectEntry& o : m.objects) {
      if (o.rank == 0) coordinator.objects.push_back(o);
    }
    return ReferenceEngine::WriteIndex(staging, coordinator);
  }
};

}  // namespace

ckptspec::TargetFactory CoordinatorOnlyIndexTarget() {
  return ckptspec::MutantTargetFactory("coordinator-only-index", [](int /*process*/) {
    ckptspec::ReplacedParts parts;
    parts.engine = [](ckptspec::ReferenceOptions options) {
      return std::unique_ptr<ckptspec::ReferenceEngine>(
          std::make_unique<CoordinatorOnlyIndexEngine>(std::move(options)));
    };
    return parts;
  });
}

}  // namespace example
