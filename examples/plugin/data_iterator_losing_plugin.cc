// An example of the public mutant interface (properties/plugin.h, docs/MUTANTS.md): a mutant
// written outside the catalog, against the public headers only, loaded with
//     ckptspec run --plugin libckptspec_example_plugin.so --target data-iterator-losing
//
// The mutant: the reference with a framework layer that forgets the data iterator's position on
// load (the resumed run starts the dataset again from sample 0 instead of continuing at
// consumed_samples, the family of docs/BUGS.md B10/B16/B18). P1 (resume equivalence) kills it: after
// k > 0 iterations the resumed run sees other samples than the uninterrupted one.
#include "properties/plugin.h"
#include "targets/mutants/mutant_target.h"

namespace {

class DataIteratorLosingFramework : public ckptspec::CanonicalFramework {
 public:
  ckptspec::Status FromStateDicts(const std::vector<ckptspec::ShardedStateDict>& loaded,
                                  const ckptspec::HeterogeneousLayout& layout,
                                  const std::vector<ckptspec::TrainingConfig>& configs,
                                  const ckptspec::LoadFlags& flags,
                                  std::vector<ckptspec::TrainingState>* states) const override {
    ckptspec::Status s = CanonicalFramework::FromStateDicts(loaded, layout, configs, flags, states);
    if (!s.ok()) return s;
    for (ckptspec::TrainingState& state : *states) {
      state.data = ckptspec::InitialDataIterator(state.config.data);
    }
    return ckptspec::Status::OK();
  }
};

}  // namespace

extern "C" void ckptspec_register_targets(ckptspec::TargetRegistrar* registrar) {
  registrar->Add(ckptspec::MutantTargetFactory("data-iterator-losing", [] {
    ckptspec::ReplacedParts parts;
    parts.framework = std::make_unique<DataIteratorLosingFramework>();
    return parts;
  }));
}
