// B15 uneven-shard-cache. Upstream: https://github.com/pytorch/torchtitan/issues/1136,
// https://github.com/pytorch/torchtitan/pull/1702.
//
// Mechanism (the plausible one docs/BUGS.md names; not confirmed upstream): with cache_state_dict and
// uneven FSDP2 dim-0 shards, the cached state-dict entries stop aliasing the padded local shards,
// so DCP's in-place load fills a copy and the parameters keep their old values. The mutant engine
// loads every UNEVEN shard (a tensor whose local extent times its fragmentation differs from the
// global extent on some axis, or any chunk of an irregular grid smaller than the tensor) into a
// copy: the template's buffer -- the destination -- keeps its pre-load content. Even shards load
// normally. Silent.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/b15_uneven_shard_cache.h"

#include <map>
#include <utility>

namespace ckptspec {
namespace {

bool IsUneven(const TensorSpec& s) {
  if (s.axis_fragmentations.size() != s.global_shape.size()) {  // irregular grid
    for (size_t a = s.prepend_axis_num; a < s.global_shape.size(); ++a) {
      if (s.local_shape[a - s.prepend_axis_num] != s.global_shape[a]) return true;
    }
    return false;
  }
  for (size_t a = s.prepend_axis_num; a < s.global_shape.size(); ++a) {
    if (s.local_shape[a - s.prepend_axis_num] * s.axis_fragmentations[a] != s.global_shape[a])
      return true;
  }
  return false;
}

class NonAliasingLoadEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;
  Status Load(LoadRequest request, LoadResult* result) override {
    // What the destinations hold before the load (by key and offset): loading into a copy
    // leaves exactly this in them.
    std::vector<std::map<std::pair<std::string, Dims>, std::vector<uint8_t>>> before(
        request.templates.size());
    for (size_t r = 0; r < request.templates.size(); ++r) {
      for (const ShardedTensor& t : request.templates[r].tensors) {
        if (IsUneven(t.spec)) before[r][{t.spec.key, t.spec.global_offset}] = t.data;
      }
    }
    CKPTSPEC_RETURN_IF_ERROR(ReferenceEngine::Load(std::move(request), result));
    for (size_t r = 0; r < before.size() && r < result->state.size(); ++r) {
      for (ShardedTensor& t : result->state[r].tensors) {
        auto it = before[r].find({t.spec.key, t.spec.global_offset});
        if (it != before[r].end() && it->second.size() == t.data.size()) t.data = it->second;
      }
    }
    return Status::OK();
  }
};

}  // namespace

ReplacedParts B15Parts() {
  ReplacedParts parts;
  parts.engine = [](ReferenceOptions options) -> std::unique_ptr<ReferenceEngine> {
    return std::make_unique<NonAliasingLoadEngine>(std::move(options));
  };
  return parts;
}

}  // namespace ckptspec
