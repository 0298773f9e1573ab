// B22 torchft-stale-lr. Upstream: https://github.com/pytorch/torchtitan/pull/4598 (and
// https://github.com/pytorch/torchtitan/pull/4422, the cache's other face).
//
// Mechanism: torchtitan's TorchFT optimizer container cached its optimizer state dict. Tensor
// state stayed current through shared references, but the param groups' scalar learning rates
// were those of the moment the dict was built, while the scheduler kept updating the live groups.
// A replica joining from a peer received those stale learning rates beside a current scheduler
// state, and restoring the scheduler state did not rewrite the optimizer's groups, so the joiner
// trained at another learning rate than its peers (persistent checkpoints saw the same dict).
// The mutant: the framework layer remembers every param group's lr the first time the process
// turns states into state dicts and emits those learning rates ever after (the rest of the state
// is current); FromStateDicts applies the load rules and then puts the loaded groups' lr back in
// place of the one the load rules recompute from the scheduler (L6). Silent; visible once the
// process has produced state dicts before and its learning rate has moved since (a heal, a save
// after training on).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "targets/mutants/framework_edits.h"
#include "targets/mutants/saved_param_groups.h"

namespace ckptspec {
namespace {

// The process's cached optimizer state dict (its scalar learning rates), by (module,
// sub-optimizer, group): the bug's hidden state, kept as long as the process's framework.
struct CachedLearningRates {
  std::mutex mu;
  std::map<std::tuple<size_t, size_t, size_t>, double> lr;
};

}  // namespace

ReplacedParts B22Parts(int /*process*/) {
  auto cache = std::make_shared<CachedLearningRates>();
  FrameworkEdits edits;
  edits.before_save = [cache](std::vector<TrainingState>* served) {
    std::lock_guard<std::mutex> lock(cache->mu);
    for (size_t m = 0; m < served->size(); ++m) {
      for (size_t o = 0; o < (*served)[m].optimizers.size(); ++o) {
        std::vector<ParamGroup>& groups = (*served)[m].optimizers[o].groups;
        for (size_t g = 0; g < groups.size(); ++g) {
          // The first dict of the process fixes each group's lr (by position).
          const auto [it, first] = cache->lr.emplace(std::make_tuple(m, o, g), groups[g].lr);
          if (!first) groups[g].lr = it->second;
        }
      }
    }
    return Status::OK();
  };
  // The scheduler state is restored; the optimizer's groups keep the lr they were loaded with.
  edits.after_rebuild = [](const LoadedCheckpoint& load, std::vector<TrainingState>* states) {
    if (load.flags.finetune || load.flags.no_load_optim) return Status::OK();
    return ForEachSavedSubOptimizer(
        load, states, [](TrainingState& s, SubOptimizer& sub, const SubOptimizer& old) -> Status {
          std::vector<int> match;
          if (!MatchSavedGroups(s, old, sub, &match)) return Status::OK();
          for (size_t g = 0; g < sub.groups.size(); ++g) {
            sub.groups[g].lr = old.groups[match[g]].lr;
          }
          return Status::OK();
        });
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
