#include "base/resource_limits.h"

#include <algorithm>

namespace ckptspec {

// The upper bounds of the flags keep a raised limit safe in itself: the depth stays far below
// what recursive code over a parsed tree (dumps, comparisons) can take on a default stack.
const ResourceLimitInfo kResourceLimitTable[kResourceLimitCount] = {
    {"max_json_depth", "--max-json-depth", &ResourceLimits::max_json_depth, 1, 4096,
     "deepest nesting of arrays and objects in metadata.json, index.json or a plan dump"},
    {"max_metadata_bytes", "--max-metadata-bytes", &ResourceLimits::max_metadata_bytes, 1,
     uint64_t{1} << 36,
     "largest metadata.json, index.json, plan dump, DCP .metadata, or pickle of a torch.save "
     "archive read, in bytes"},
    {"max_chunks", "--max-chunks", &ResourceLimits::max_chunks, 1, uint64_t{1} << 32,
     "most tensor chunks plus objects in one iteration's index, entries in a plan dump, or "
     "chunks plus storage entries in a DCP .metadata"},
    {"max_read_ratio", "--max-read-ratio", &ResourceLimits::max_read_ratio, 1, uint64_t{1} << 40,
     "most bytes of data read per byte the checkpoint occupies on disk"},
};

JsonLimits ResourceLimits::json() const {
  JsonLimits limits;
  limits.max_depth =
      static_cast<int>(std::min(max_json_depth, LimitInfo(&ResourceLimits::max_json_depth).max));
  limits.max_bytes = max_metadata_bytes;
  return limits;
}

const ResourceLimitInfo& LimitInfo(uint64_t ResourceLimits::*field) {
  for (const ResourceLimitInfo& info : kResourceLimitTable) {
    if (info.field == field) return info;
  }
  return kResourceLimitTable[0];  // unreachable: every field has its row (resource_limits_test)
}

Status LimitExceeded(const std::string& what, uint64_t value, const char* noun,
                     uint64_t ResourceLimits::*field, const ResourceLimits& limits) {
  const ResourceLimitInfo& info = LimitInfo(field);
  return Status::NotSupported(what + ": " + std::to_string(value) + " " + noun + " exceed " +
                              info.name + " = " + std::to_string(limits.*field) + " (" + info.flag +
                              " raises it)");
}

}  // namespace ckptspec
