#include "targets/mutants/mutant_target.h"

#include "targets/reference/reference_factory.h"

namespace ckptspec {

TargetFactory MutantTargetFactory(const std::string& name, MakeParts parts) {
  TargetFactory factory = ReplacedPartsTargetFactory(name, std::move(parts));
  factory.expect_killed = true;
  return factory;
}

}  // namespace ckptspec
