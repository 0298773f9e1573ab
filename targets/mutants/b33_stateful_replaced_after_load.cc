// B33 stateful-replaced-after-load. Upstream: https://github.com/pytorch/pytorch/pull/138575 (the
// fix; its test followed in https://github.com/pytorch/pytorch/pull/139251); the torchtitan side:
// https://github.com/pytorch/torchtitan/issues/571 and the workaround
// https://github.com/pytorch/torchtitan/pull/647.
//
// Mechanism: a trainer keeps one dict of its Stateful objects (model, optimizer, scheduler, data
// loader, train state) for every save and load of the process. `dcp.load` loaded each Stateful
// element by asking it for its state dict, loading into that dict and calling its
// load_state_dict -- and then also put the loaded dict into the caller's dict in place of the
// object. From then on the trainer's dict held plain copies: their tensors were views of the live
// parameters and optimizer state, but their scalars (the step, the scheduler's counters, the
// learning rates of the param groups, the data loader's position) were the values of that load,
// cut off from the objects the training loop drives. A second load in the same process (a
// rollback to an earlier checkpoint, a checkpoint.load() in a live job) wrote into those copies:
// the tensors went back in place, the live train state, scheduler and loader kept what training
// had made of them. (A save after the first load wrote the stale copies' scalars: issue #571's
// symptom. The mutant leaves that face out, so that only a reload shows it.)
// The mutant: the framework remembers that its process has loaded (a restart's resume or a
// heal's join counts); from the next load on, when the load is a reload of the live process
// (LoadedCheckpoint::live), FromStateDicts applies the load rules and then gives back the live
// process's iteration, param groups, scheduler, RNG, data iterator and rerun machine -- what the
// checkpoint holds as objects and common state -- keeping the loaded parameters and optimizer
// tensors. Silent; only a reload after an earlier load in the same process shows it.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <atomic>
#include <memory>

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B33Parts(int /*process*/) {
  // Whether this process has loaded before: the replaced entries of the trainer's dict are the
  // bug's hidden state.
  auto loaded_before = std::make_shared<std::atomic<bool>>(false);
  FrameworkEdits edits;
  edits.after_rebuild = [loaded_before](const LoadedCheckpoint& load,
                                        std::vector<TrainingState>* states) {
    // The trainer's dict now holds the loaded copies.
    const bool replaced = loaded_before->exchange(true);
    if (!replaced || load.live == nullptr || load.live->size() != states->size()) {
      return Status::OK();
    }
    for (size_t m = 0; m < states->size(); ++m) {
      const TrainingState& live = (*load.live)[m];
      TrainingState& s = (*states)[m];
      // Loaded into copies nothing reads: the live objects keep their values.
      s.optimizers = live.optimizers;
      s.scheduler = live.scheduler;
      s.rng = live.rng;
      s.data = live.data;
      s.rerun = live.rerun;
      s.iteration = live.iteration;
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
