#include "targets/reference/reference_target.h"

namespace ckptspec {

namespace {

std::unique_ptr<ReferenceEngine> BuildEngine(ReferenceOptions options, ReplacedParts& replaced) {
  if (replaced.plan_cache) options.plan_cache = std::move(replaced.plan_cache);
  if (replaced.engine) return replaced.engine(std::move(options));
  return std::make_unique<ReferenceEngine>(std::move(options));
}

}  // namespace

ReferenceTarget::ReferenceTarget(std::string name, ReferenceOptions engine, ReplacedParts replaced)
    : name_(std::move(name)),
      framework_(replaced.framework ? std::move(replaced.framework)
                                    : std::make_unique<CanonicalFramework>()),
      engine_(BuildEngine(std::move(engine), replaced)),
      export_(replaced.checkpoint_export ? replaced.checkpoint_export(engine_.get())
                                         : std::make_unique<ReferenceExport>(engine_.get())) {}

}  // namespace ckptspec
