// Save planning: which rank writes which item (deduplication of replicas), and the plan cache
// behind --ckpt-assume-constant-structure (docs/SEMANTICS.md §3, docs/DESIGN.md §5, P7).
//
// Contracts:
//  - MakeSavePlan writes exactly the main replicas (replica id all zeros): each by the rank that
//    holds it, in the rank's dict order. Non-main replicas are never written.
//  - StructureFingerprint hashes everything a plan depends on: per rank, each tensor's key,
//    dtype, global shape, offset, local shape and replica id, and each object's key, global
//    shape, offset and replica id. Data and common state do not enter it.
//  - PlanCache::Lookup returns the stored plan only when its fingerprint equals the current one,
//    so any structure change (an object that appears only in a fault save, a frozen or added
//    parameter) re-plans. It is the one component a mutant replaces to reproduce Megatron's
//    frozen cached_local_plan (docs/BUGS.md B04): a Lookup that ignores the fingerprint.
//  - ResolvePlan binds a plan to the dicts being saved and fails (FailedPrecondition) when an
//    item no longer exists or no longer matches; items the plan lacks are not written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/box.h"
#include "model/sharded.h"
#include "model/status.h"

namespace ckptspec {

struct WriteItem {
  bool is_object = false;
  int64_t rank = 0;  // the writing rank, whose dict holds the item
  size_t index = 0;  // into that dict's tensors or objects
  std::string key;   // tensor key, or object unique key
  Box box;           // tensors: the chunk's box
};

struct SavePlan {
  uint64_t fingerprint = 0;
  std::vector<WriteItem> items;  // grouped by rank, ascending
};

uint64_t StructureFingerprint(const std::vector<ShardedStateDict>& every_rank);
SavePlan MakeSavePlan(const std::vector<ShardedStateDict>& every_rank, uint64_t fingerprint);
// Checks that every item of `plan` names an entry of `every_rank` with the same key and box.
Status ResolvePlan(const SavePlan& plan, const std::vector<ShardedStateDict>& every_rank);

class PlanCache {
 public:
  PlanCache() = default;
  PlanCache(const PlanCache&) = delete;  // a polymorphic base: never copied
  PlanCache& operator=(const PlanCache&) = delete;
  virtual ~PlanCache() = default;
  // The cached plan if it was made for a structure with this fingerprint; otherwise nullptr.
  virtual const SavePlan* Lookup(uint64_t fingerprint) const;
  virtual void Store(const SavePlan& plan);
  void Clear() { plan_.reset(); }
  // How many Lookups returned a plan; for tests and reports.
  int64_t hits() const { return hits_; }

 protected:
  std::optional<SavePlan> plan_;
  mutable int64_t hits_ = 0;
};

}  // namespace ckptspec
