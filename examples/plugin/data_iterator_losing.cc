// A framework-layer mutant (docs/PLUGINS.md, example 1): the reference with a framework layer whose
// data loader is not checkpoint-aware: it loads the data iterator by a rule of its own
// (RebuildWithOwnRule, targets/target.h) that starts the dataset again from sample 0 instead of
// continuing at consumed_samples (the family of docs/BUGS.md B10/B16/B18). Every other state class
// loads by the spec's rules. P1 (resume equivalence) kills it: after k > 0 iterations the resumed
// run sees other samples than the uninterrupted one.
#include "examples.h"
#include "targets/mutants/mutant_target.h"

namespace example {
namespace {

class DataIteratorLosingFramework : public ckptspec::CanonicalFramework {
 public:
  // The canonical entries less the data iterator's: this loader asks the checkpoint for nothing.
  ckptspec::Status LoadTemplates(
      const ckptspec::HeterogeneousLayout& layout,
      const std::vector<ckptspec::TrainingConfig>& configs, const ckptspec::CheckpointInfo& saved,
      const ckptspec::LoadFlags& flags,
      std::vector<ckptspec::ShardedStateDict>* every_rank) const override {
    return CanonicalFramework::LoadTemplates(
        layout, configs, saved, FlagsLeavingOut(flags, ckptspec::OwnRuleClass::kDataIterator),
        every_rank);
  }
  ckptspec::Status FromStateDicts(const ckptspec::LoadedCheckpoint& load,
                                  std::vector<ckptspec::TrainingState>* states) const override {
    ckptspec::OwnLoadRule rule;
    rule.replaces = ckptspec::OwnRuleClass::kDataIterator;
    rule.apply = [](const ckptspec::LoadedCheckpoint&, size_t, ckptspec::TrainingState* state) {
      state->data = ckptspec::InitialDataIterator(state->config.data);  // the dataset from 0
      return ckptspec::Status::OK();
    };
    return RebuildWithOwnRule(load, ckptspec::MissingEntryFill(), rule, states);
  }
};

}  // namespace

ckptspec::TargetFactory DataIteratorLosingTarget() {
  return ckptspec::MutantTargetFactory("data-iterator-losing", [](int /*process*/) {
    ckptspec::ReplacedParts parts;
    parts.framework = std::make_unique<DataIteratorLosingFramework>();
    return parts;
  });
}

}  // namespace example
