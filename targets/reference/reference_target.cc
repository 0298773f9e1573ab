#include "targets/reference/reference_target.h"

namespace ckptspec {

ReferenceTarget::ReferenceTarget(ReferenceTargetParts parts)
    : name_(std::move(parts.name)),
      framework_(parts.framework ? std::move(parts.framework)
                                 : std::make_unique<CanonicalFramework>()),
      engine_(std::make_unique<ReferenceEngine>(std::move(parts.engine))) {}

}  // namespace ckptspec
