// The edited framework (framework_edits.h): with no edits it is the canonical framework, and each
// edit sees and changes what its contract says, on any run saved and loaded back in memory.
#include "targets/mutants/framework_edits.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "generators/run_gen.h"
#include "model/chunk_resolve.h"
#include "model/run_spec.h"

namespace ckptspec {
namespace {

struct Case {
  RunSpec run;
  std::vector<TrainingState> states;
};

Case AnyTrainedRun() {
  Case c;
  c.run = *gen::RunUpTo(4);
  RC_ASSERT(InitialStates(c.run, &c.states).ok());
  RC_ASSERT(TrainRun(&c.states, *rc::gen::inRange<int64_t>(0, 3)).ok());
  return c;
}

bool SameDicts(const std::vector<ShardedStateDict>& a, const std::vector<ShardedStateDict>& b) {
  if (a.size() != b.size()) return false;
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r].tensors.size() != b[r].tensors.size() || a[r].objects.size() != b[r].objects.size() ||
        *a[r].common != *b[r].common) {
      return false;
    }
    for (size_t i = 0; i < a[r].tensors.size(); ++i) {
      const ShardedTensor &x = a[r].tensors[i], &y = b[r].tensors[i];
      if (!(x.spec == y.spec) || x.data != y.data) return false;
    }
    for (size_t i = 0; i < a[r].objects.size(); ++i) {
      const ShardedObject &x = a[r].objects[i], &y = b[r].objects[i];
      if (!(x.spec == y.spec) || x.data != y.data) return false;
    }
  }
  return true;
}

// What `framework` saves of the case, its templates for a load of that save under the same run,
// and the states it rebuilds from the save's main replicas (a resume without storage).
struct RoundTrip {
  std::vector<ShardedStateDict> saved, templates;
  std::vector<TrainingState> rebuilt;
};

Status RoundTripThrough(const FrameworkLayer& framework, const Case& c, RoundTrip* out) {
  CKPTSPEC_RETURN_IF_ERROR(
      framework.ToStateDicts(c.run.layout, c.states, c.run.sharding, &out->saved));
  CheckpointInfo info;
  CKPTSPEC_RETURN_IF_ERROR(framework.ReadCheckpointInfo(*out->saved[0].common, &info));
  CKPTSPEC_RETURN_IF_ERROR(
      framework.LoadTemplates(c.run.layout, c.run.configs, info, LoadFlags(), &out->templates));
  std::vector<ShardedStateDict> loaded = out->templates;
  for (size_t r = 0; r < loaded.size(); ++r) {
    CKPTSPEC_RETURN_IF_ERROR(ResolveFromSaved(out->saved, static_cast<int64_t>(r), &loaded[r]));
  }
  const std::vector<ShardedStateDict> requested = RequestedSpecs(out->templates);
  const LoadFlags flags;
  const LoadedCheckpoint load{loaded, requested, info, c.run.layout, c.run.configs, flags};
  return framework.FromStateDicts(load, &out->rebuilt);
}

// Appends `suffix` to every rank's tensor keys.
void RenameTensors(const std::string& suffix, std::vector<ShardedStateDict>* every_rank) {
  for (ShardedStateDict& d : *every_rank) {
    for (ShardedTensor& t : d.tensors) t.spec.key += suffix;
  }
}

// Takes `suffix` off every rank's tensor keys that end in it.
void RenameTensorsBack(const std::string& suffix, std::vector<ShardedStateDict>* every_rank) {
  for (ShardedStateDict& d : *every_rank) {
    for (ShardedTensor& t : d.tensors) {
      const size_t n = t.spec.key.size();
      if (n >= suffix.size() && t.spec.key.compare(n - suffix.size(), suffix.size(), suffix) == 0)
        t.spec.key.resize(n - suffix.size());
    }
  }
}

RC_GTEST_PROP(FrameworkEdits, NoEditsIsTheCanonicalFramework, ()) {
  const Case c = AnyTrainedRun();
  const ReplacedParts parts = EditedFrameworkParts(FrameworkEdits());
  RoundTrip canonical, edited;
  RC_ASSERT(RoundTripThrough(CanonicalFramework(), c, &canonical).ok());
  RC_ASSERT(RoundTripThrough(*parts.framework, c, &edited).ok());
  RC_ASSERT(SameDicts(edited.saved, canonical.saved));
  RC_ASSERT(SameDicts(edited.templates, canonical.templates));
  RC_ASSERT(FirstRunDifference(edited.rebuilt, canonical.rebuilt) == "");
}

// Every state saved at a later iteration, every tensor saved and requested under another key and
// mapped back before the rebuild, every rebuilt state one iteration on: the round trip is the
// canonical one of the later states, with the rebuilt states moved on, only because each edit runs
// where its contract says.
RC_GTEST_PROP(FrameworkEdits, EditsApplyWhereTheirContractSays, ()) {
  const Case c = AnyTrainedRun();
  const std::string suffix = ".edited";
  FrameworkEdits edits;
  std::vector<int64_t> iterations_after_save;
  bool loaded_given_as_a_copy = false;
  edits.before_save = [](std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) s.iteration += 1000;
    return Status::OK();
  };
  edits.after_save = [&](const std::vector<TrainingState>& states,
                         std::vector<ShardedStateDict>* every_rank) {
    for (const TrainingState& s : states) iterations_after_save.push_back(s.iteration);
    RenameTensors(suffix, every_rank);
    return Status::OK();
  };
  edits.after_templates = [&](const CheckpointInfo&, std::vector<ShardedStateDict>* every_rank) {
    RenameTensors(suffix, every_rank);
    return Status::OK();
  };
  edits.before_rebuild = [&](const LoadedCheckpoint& load, std::vector<ShardedStateDict>* loaded,
                             std::vector<ShardedStateDict>* requested) {
    loaded_given_as_a_copy =
        SameDicts(*loaded, load.loaded) && SameDicts(*requested, load.requested);
    RenameTensorsBack(suffix, loaded);
    RenameTensorsBack(suffix, requested);
    return Status::OK();
  };
  edits.after_rebuild = [](const LoadedCheckpoint&, std::vector<TrainingState>* states) {
    for (TrainingState& s : *states) s.iteration += 1;
    return Status::OK();
  };
  RoundTrip edited;
  RC_ASSERT(RoundTripThrough(*EditedFrameworkParts(edits).framework, c, &edited).ok());

  Case later = c;
  for (TrainingState& s : later.states) s.iteration += 1000;
  RoundTrip expected;
  RC_ASSERT(RoundTripThrough(CanonicalFramework(), later, &expected).ok());
  RenameTensors(suffix, &expected.saved);
  RenameTensors(suffix, &expected.templates);
  for (TrainingState& s : expected.rebuilt) s.iteration += 1;

  RC_ASSERT(iterations_after_save.size() == c.states.size());
  for (size_t m = 0; m < c.states.size(); ++m) {
    RC_ASSERT(iterations_after_save[m] == c.states[m].iteration);  // the states as given
  }
  RC_ASSERT(SameDicts(edited.saved, expected.saved));
  RC_ASSERT(SameDicts(edited.templates, expected.templates));
  RC_ASSERT(loaded_given_as_a_copy);
  RC_ASSERT(FirstRunDifference(edited.rebuilt, expected.rebuilt) == "");

  // Without before_rebuild the canonical rebuild gets the renamed entries.
  edits.before_rebuild = nullptr;
  RoundTrip unmapped;
  const Status s = RoundTripThrough(*EditedFrameworkParts(edits).framework, c, &unmapped);
  RC_ASSERT(!s.ok() || FirstRunDifference(unmapped.rebuilt, expected.rebuilt) != "");
}

RC_GTEST_PROP(FrameworkEdits, AnEditsErrorIsTheMethodsError, ()) {
  const Case c = AnyTrainedRun();
  const Status failure = Status::Corruption("the edit's own error");
  for (int edit = 0; edit < 6; ++edit) {
    FrameworkEdits edits;
    switch (edit) {
      case 0:
        edits.before_save = [&](std::vector<TrainingState>*) { return failure; };
        break;
      case 1:
        edits.after_save = [&](const std::vector<TrainingState>&, std::vector<ShardedStateDict>*) {
          return failure;
        };
        break;
      case 2:
        edits.before_templates = [&](const std::vector<TrainingConfig>&, CheckpointInfo*) {
          return failure;
        };
        break;
      case 3:
        edits.after_templates = [&](const CheckpointInfo&, std::vector<ShardedStateDict>*) {
          return failure;
        };
        break;
      case 4:
        edits.before_rebuild = [&](const LoadedCheckpoint&, std::vector<ShardedStateDict>*,
                                   std::vector<ShardedStateDict>*) { return failure; };
        break;
      default:
        edits.after_rebuild = [&](const LoadedCheckpoint&, std::vector<TrainingState>*) {
          return failure;
        };
    }
    RoundTrip got;
    const Status s = RoundTripThrough(*EditedFrameworkParts(edits).framework, c, &got);
    RC_ASSERT(s.code() == failure.code());
    RC_ASSERT(s.message() == failure.message());
  }
}

}  // namespace
}  // namespace ckptspec
