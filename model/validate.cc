#include "model/validate.h"

namespace ckptspec {

const char* ViolationKindName(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kInvalidEntry:
      return "invalid_entry";
    case ViolationKind::kDtypeMismatch:
      return "dtype_mismatch";
    case ViolationKind::kGlobalShapeMismatch:
      return "global_shape_mismatch";
    case ViolationKind::kGridMismatch:
      return "grid_mismatch";
    case ViolationKind::kLocalShapeMismatch:
      return "local_shape_mismatch";
    case ViolationKind::kOverlap:
      return "overlap";
    case ViolationKind::kGap:
      return "gap";
    case ViolationKind::kDuplicateMain:
      return "duplicate_main";
    case ViolationKind::kMissingObject:
      return "missing_object";
    case ViolationKind::kExtraObject:
      return "extra_object";
    case ViolationKind::kKeyCollision:
      return "key_collision";
    case ViolationKind::kReplicaContentMismatch:
      return "replica_content_mismatch";
    case ViolationKind::kCommonStateDivergence:
      return "common_state_divergence";
    case ViolationKind::kAdded:
      return "added";
    case ViolationKind::kRemoved:
      return "removed";
    case ViolationKind::kReshaped:
      return "reshaped";
    case ViolationKind::kReReplicated:
      return "re_replicated";
  }
  return "unknown";
}

std::string Violation::ToString() const {
  return property + " " + ViolationKindName(kind) + ": " + message;
}

std::string FormatViolations(const std::vector<Violation>& violations) {
  if (violations.empty()) return "no violations\n";
  std::string out = std::to_string(violations.size()) +
                    (violations.size() == 1 ? " violation:\n" : " violations:\n");
  for (const Violation& v : violations) out += "  " + v.ToString() + "\n";
  return out;
}

}  // namespace ckptspec
