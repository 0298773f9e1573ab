#include "properties/target_registry.h"

namespace ckptspec {

std::vector<TargetFactory> RegisteredTargets() { return {ReferenceTargetFactory()}; }

Status ResolveTargets(const std::string& name, std::vector<TargetFactory>* out) {
  const std::vector<TargetFactory> all = RegisteredTargets();
  if (name == "all") {
    out->insert(out->end(), all.begin(), all.end());
    return Status::OK();
  }
  std::string known;
  for (const TargetFactory& f : all) {
    if (f.name == name) {
      out->push_back(f);
      return Status::OK();
    }
    known += (known.empty() ? "" : ", ") + f.name;
  }
  return Status::InvalidArgument("unknown target '" + name + "' (known: " + known + ", all)");
}

}  // namespace ckptspec
