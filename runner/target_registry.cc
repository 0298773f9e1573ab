#include "runner/target_registry.h"

#include "targets/mutants/catalog.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {

std::vector<TargetFactory> RegisteredTargets() {
  std::vector<TargetFactory> all = {ReferenceTargetFactory(),
                                    ReferenceTargetFactory(IndexLayout::kPerWriter)};
  for (const MutantInfo& m : MutantCatalog()) all.push_back(MutantFactory(m));
  return all;
}

Status ResolveTargets(const std::string& name, std::vector<TargetFactory>* out,
                      const std::vector<TargetFactory>& extra) {
  std::vector<TargetFactory> all = RegisteredTargets();
  all.insert(all.end(), extra.begin(), extra.end());
  if (name == "all") {
    out->insert(out->end(), all.begin(), all.end());
    return Status::OK();
  }
  if (name == "all-mutants") {
    for (const MutantInfo& m : MutantCatalog()) out->push_back(MutantFactory(m));
    return Status::OK();
  }
  if (const MutantInfo* m = FindMutant(name)) {  // also by its name: "cached-plan-drops-rerun"
    out->push_back(MutantFactory(*m));
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
  return Status::InvalidArgument("unknown target '" + name + "' (known: " + known +
                                 ", all, all-mutants)");
}

}  // namespace ckptspec
