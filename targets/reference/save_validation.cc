// ValidateSaveInput: the checks a save runs before it writes anything.
#include <string>

#include "model/validate.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {

Status ValidateSaveInput(const std::vector<ShardedStateDict>& every_rank, bool global) {
  if (every_rank.empty()) return Status::InvalidArgument("save of zero ranks");
  for (size_t rank = 0; rank < every_rank.size(); ++rank) {
    const std::string where = "rank " + std::to_string(rank) + ": ";
    for (const ShardedTensor& t : every_rank[rank].tensors) {
      const Status s = ValidateTensorSpec(t.spec);
      if (!s.ok()) return s.WithContext("rank " + std::to_string(rank));
      int64_t volume = 0;
      CheckedVolume(t.spec.local_shape, &volume);  // validated above
      const uint64_t want = static_cast<uint64_t>(volume) * DTypeSize(t.spec.dtype);
      if (t.data.size() != want) {
        return Status::InvalidArgument(where + "tensor '" + t.spec.key + "' holds " +
                                       std::to_string(t.data.size()) + " bytes, its local shape " +
                                       DimsToString(t.spec.local_shape) + " of " +
                                       DTypeName(t.spec.dtype) + " needs " + std::to_string(want));
      }
    }
    for (const ShardedObject& o : every_rank[rank].objects) {
      const Status s = ValidateObjectSpec(o.spec);
      if (!s.ok()) return s.WithContext("rank " + std::to_string(rank));
    }
  }
  if (!global) return Status::OK();
  GlobalSignature signature;
  signature.ranks.reserve(every_rank.size());
  for (size_t rank = 0; rank < every_rank.size(); ++rank) {
    signature.ranks.push_back(SignatureOf(static_cast<int64_t>(rank), every_rank[rank]));
  }
  std::vector<Violation> violations = CheckShardingIntegrity(signature);
  for (std::vector<Violation> more :
       {CheckKeyInjectivity(signature), CheckCommonState(signature)}) {
    violations.insert(violations.end(), more.begin(), more.end());
  }
  if (!violations.empty()) {
    return Status::InvalidArgument("save refused, the sharding is invalid: " +
                                   FormatViolations(violations));
  }
  return Status::OK();
}

}  // namespace ckptspec
