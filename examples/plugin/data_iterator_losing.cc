// A framework-layer mutant (docs/PLUGINS.md, example 1): the reference with a framework layer that
// forgets the data iterator's position on load. The resumed run starts the dataset again from
// sample 0 instead of continuing at consumed_samples (the family of docs/BUGS.md B10/B16/B18).
// P1 (resume equivalence) kills it: after k > 0 iterations the resumed run sees other samples
// than the uninterrupted one.
#include "examples.h"
#include "targets/mutants/mutant_target.h"

namespace example {
namespace {

class DataIteratorLosingFramework : public ckptspec::CanonicalFramework {
 public:
  ckptspec::Status FromStateDicts(const ckptspec::LoadedCheckpoint& load,
                                  std::vector<ckptspec::TrainingState>* states) const override {
    ckptspec::Status s = CanonicalFramework::FromStateDicts(load, states);
    if (!s.ok()) return s;
    for (ckptspec::TrainingState& state : *states) {
      state.data = ckptspec::InitialDataIterator(state.config.data);
    }
    return ckptspec::Status::OK();
  }
};

}  // namespace

ckptspec::TargetFactory DataIteratorLosingTarget() {
  return ckptspec::MutantTargetFactory("data-iterator-losing", [] {
    ckptspec::ReplacedParts parts;
    parts.framework = std::make_unique<DataIteratorLosingFramework>();
    return parts;
  });
}

}  // namespace example
