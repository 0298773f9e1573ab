// B15 uneven-shard-cache. Upstream: https://github.com/pytorch/torchtitan/issues/1136,
// https://github.com/pytorch/torchtitan/pull/1702.
//
// Mechanism (the plausible one docs/BUGS.md names; not confirmed upstream): with cache_state_dict and
// uneven FSDP2 dim-0 shards, the cached state-dict entries stop aliasing the padded local shards,
// so DCP's in-place load fills a copy and the parameters keep their old values. The mutant engine's
// OpenHostDestination step gives every UNEVEN shard (a tensor whose local extent times its
// fragmentation differs from the global extent on some axis, or any chunk of an irregular grid
// smaller than the tensor) a copy to load into: the template's buffer -- the destination -- keeps
// its pre-load content. Even shards load normally. Silent.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/mutant_target.h"

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

// A shard-sized buffer the destination owns: what is loaded into it is lost with it.
class CopyDestination : public HostTensorDestination {
 public:
  explicit CopyDestination(size_t size) : HostTensorDestination(&copy_), copy_(size) {}

 private:
  std::vector<uint8_t> copy_;
};

class NonAliasingLoadEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;

 protected:
  Status OpenHostDestination(size_t rank, ShardedTensor* tensor,
                             std::unique_ptr<TensorDestination>* out) override {
    if (!IsUneven(tensor->spec)) return ReferenceEngine::OpenHostDestination(rank, tensor, out);
    *out = std::make_unique<CopyDestination>(tensor->data.size());
    return Status::OK();
  }
};

}  // namespace

ReplacedParts B15Parts(int /*process*/) { return EngineParts<NonAliasingLoadEngine>(); }

}  // namespace ckptspec
