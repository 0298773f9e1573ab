// B27 rank-local-merged-by-name. Upstream: https://github.com/pytorch/pytorch/issues/120356
// (feature request https://github.com/pytorch/pytorch/issues/146566).
//
// Mechanism: PyTorch DCP's save planner deduplicates write items by their metadata index (the
// key and the chunk offset) across ranks (dedup_save_plans): a plain tensor or bytes value that
// every rank puts under one key is taken for a replicated value and written once, by one rank
// (the lowest before torch 2.3, the least loaded since), and every rank loads that one copy. A
// value that differs by rank (a per-rank RNG state, a rank-local counter) silently becomes one
// rank's on every rank. The mutant engine's WriteShardFiles step keeps, for each rank-local key,
// the value of the lowest rank that holds it and writes it for every rank: the index looks as
// the reference's does and every rank loads a value, the first rank's. Silent.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <map>

#include "targets/mutants/mutant_target.h"

namespace ckptspec {
namespace {

class MergedByNameEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;

 protected:
  Status WriteShardFiles(const std::string& staging,
                         const std::vector<ShardedStateDict>& every_rank, const SavePlan& plan,
                         CheckpointMetadata* out) override {
    std::map<std::string, const std::string*> kept;  // rank-local key -> the lowest rank's value
    for (const ShardedStateDict& d : every_rank) {
      for (const ShardedObject& o : d.objects) {
        if (IsRankLocal(o.spec)) kept.emplace(o.spec.key, &o.data);
      }
    }
    std::vector<ShardedStateDict> merged = every_rank;
    for (ShardedStateDict& d : merged) {
      for (ShardedObject& o : d.objects) {
        if (IsRankLocal(o.spec)) o.data = *kept.at(o.spec.key);
      }
    }
    return ReferenceEngine::WriteShardFiles(staging, merged, plan, out);
  }
};

}  // namespace

ReplacedParts B27Parts(int /*process*/) { return EngineParts<MergedByNameEngine>(); }

}  // namespace ckptspec
