// P7, plan-cache safety: with SaveOptions::assume_constant_structure on every save, a sequence of
// saves whose structure CHANGES once (a rerun fault appears; every instance of a stacked parameter
// key is frozen; a parameter is added: one more layer per pipeline stage, or biases) re-plans or
// fails loudly: every save either returns an error or holds every main item. Saves before and
// after the change also carry NEW data, which must be written (not the data of the save the plan
// was made for). Their structure is the previous save's, except where the spec itself changes it:
// a first save at iteration 0 of a module of the torch.optim freezing family has no optimizer
// entries, which appear with the first step (training_state.h), so its next save grows. The log
// states, for every save, whether its structure (P6's DiffStructure of the framework's dicts) is
// the previous save's and, when not, its first change. At the end every successful save is resumed
// with the templates of the run that made it and compared with the specification (ExpectedResume).
// Not applicable without Capabilities::plan_cache.
// Catches: B04 (a cached plan drops the rerun object of a fault save), B09 (a cache keyed on
// structure re-writes stale data), a cached plan that silently drops added parameters.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "generators/run_gen.h"
#include "model/layout.h"
#include "model/validate.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/run_faults.h"

namespace ckptspec {
namespace {

enum class Change { kRerunFault, kFreeze, kAddParameter };

const char* ChangeName(Change c) {
  switch (c) {
    case Change::kRerunFault:
      return "a rerun fault appears";
    case Change::kFreeze:
      return "a parameter key is frozen";
    case Change::kAddParameter:
      return "a parameter is added";
  }
  return "?";
}

// How RapidCheck prints the generated change in a counterexample.
void showValue(Change c, std::ostream& os) { os << ChangeName(c); }

struct SaveRecord {
  RunSpec run;
  std::vector<TrainingState> states;
  int64_t iteration = 0;
  Status status;
};

// A model of module 0 with more parameters that still fits its layout: biases, else one more layer
// per pipeline stage. False when neither fits.
bool Grown(const RunSpec& run, RunSpec* out, std::string* how) {
  const Layout& layout = run.layout.modules()[0].layout;
  std::vector<ModelConfig> candidates;
  std::vector<std::string> names;
  if (!run.configs[0].model.add_bias) {
    ModelConfig m = run.configs[0].model;
    m.add_bias = true;
    candidates.push_back(m);
    names.push_back("biases added");
  }
  {
    ModelConfig m = run.configs[0].model;
    m.num_layers += static_cast<int>(layout.pp());
    candidates.push_back(m);
    names.push_back("one more layer per pipeline stage");
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!ValidateModelConfig(candidates[i]).ok() ||
        !ValidateModelForLayout(candidates[i], layout).ok())
      continue;
    *out = run;
    out->configs[0].model = candidates[i];
    // A frozen stacked key stays frozen in every instance, the new layer's included.
    std::vector<std::string> frozen_keys;
    for (const ParameterSpec& p : ModelParameters(run.configs[0].model)) {
      if (std::find(run.configs[0].frozen.begin(), run.configs[0].frozen.end(), p.name) !=
          run.configs[0].frozen.end()) {
        frozen_keys.push_back(p.key);
      }
    }
    out->configs[0].frozen.clear();
    for (const ParameterSpec& p : ModelParameters(candidates[i])) {
      if (std::find(frozen_keys.begin(), frozen_keys.end(), p.key) != frozen_keys.end()) {
        out->configs[0].frozen.push_back(p.name);
      }
    }
    TrainingState probe;
    if (!InitialTrainingState(out->configs[0], &probe).ok()) continue;
    *how = names[i];
    return true;
  }
  return false;
}

// Freezes every instance of one trainable key of module 0; false when none is left to freeze.
bool FreezeOneKey(RunSpec* run, std::vector<TrainingState>* states, std::string* key) {
  TrainingState& s = (*states)[0];
  std::vector<std::string> keys;
  for (size_t i = 0; i < s.specs.size(); ++i) {
    if (!s.params[i].frozen && std::find(keys.begin(), keys.end(), s.specs[i].key) == keys.end()) {
      keys.push_back(s.specs[i].key);
    }
  }
  if (keys.empty()) return false;
  *key = keys[*rc::gen::inRange<size_t>(0, keys.size())];
  for (size_t i = 0; i < s.specs.size(); ++i) {
    if (s.specs[i].key == *key && !s.params[i].frozen) {
      CKPTSPEC_RC_ASSERT_OK(FreezeParameter(&s, s.specs[i].name));
    }
  }
  run->configs[0].frozen = s.config.frozen;
  return true;
}

// "same structure as the previous save", or the count of keys whose structure changed since the
// previous save (`diff`, P6's DiffStructure) and the first of them.
std::string StructureNote(const StructureDiff& diff) {
  if (diff.empty()) return "same structure as the previous save";
  const StructureChange& first = diff.changes.front();
  const char* how = first.kind == ViolationKind::kAdded      ? "added"
                    : first.kind == ViolationKind::kRemoved  ? "removed"
                    : first.kind == ViolationKind::kReshaped ? "chunked otherwise"
                                                             : "replicated otherwise";
  return "structure changed from the previous save: " + std::to_string(diff.changes.size()) +
         (diff.changes.size() == 1 ? " key, " : " keys, the first ") +
         (first.is_object ? "ShardedObject '" : "tensor '") + first.key + "' " + how + " (" +
         first.detail + ")";
}

}  // namespace

std::string PlanCacheNotApplicable(const TargetFactory& factory) {
  return factory.capabilities.plan_cache
             ? ""
             : "the target has no save-plan cache (capabilities.plan_cache)";
}

void CheckPlanCacheSafety(const TargetFactory& factory) {
  RunSpec run = *gen::RunUpTo(8);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  Change change = *rc::gen::elementOf(
      std::vector<Change>{Change::kRerunFault, Change::kFreeze, Change::kAddParameter});
  const bool async = factory.capabilities.async && *rc::gen::arbitrary<bool>();
  RunSpec grown;
  std::string how;
  if (change == Change::kAddParameter && !Grown(run, &grown, &how)) change = Change::kFreeze;
  if (change == Change::kRerunFault) {
    for (TrainingConfig& c : run.configs) c.rerun_mode = RerunMode::kValidateResults;
  }

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  SaveOptions options;
  options.assume_constant_structure = true;
  options.async = async;
  std::vector<SaveRecord> saves;
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  every save with"
           << " assume_constant_structure (" << (async ? "async" : "sync") << "); the structure"
           << " changes once: " << ChangeName(change) << "\n";
  std::optional<GlobalSignature> previous_structure;
  bool structure_grew_before_the_change = false;
  auto save = [&](const RunSpec& r, const std::vector<TrainingState>& states,
                  const std::string& what) {
    std::vector<ShardedStateDict> dicts;
    CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(r.layout, states, r.sharding, &dicts));
    GlobalSignature structure = RunSignature(dicts, false);
    std::string note = "the first save";
    if (previous_structure) {
      const StructureDiff diff = DiffStructure(*previous_structure, structure);
      note = StructureNote(diff);
      if (saves.size() == 1) structure_grew_before_the_change = !diff.empty();
    }
    previous_structure = std::move(structure);
    SaveRecord rec{r, states, states.front().iteration, Status::OK()};
    rec.status = SaveRun(target, r, states, rec.iteration, options);
    if (rec.status.ok()) rec.status = target.engine().Finalize();
    RC_LOG() << "  save iteration " << rec.iteration << " (" << what << "; " << note
             << "): " << (rec.status.ok() ? std::string("ok") : rec.status.ToString()) << "\n";
    saves.push_back(std::move(rec));
  };

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));
  save(run, states, "first plan");
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, 1));
  save(run, states, "new data");
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, 1));
  std::string key;
  switch (change) {
    case Change::kRerunFault:
      CKPTSPEC_RC_ASSERT_OK(DriveToRerunFromCheckpoint(&states));
      save(run, states, "rerun fault: WILL_RERUN_FROM_CHECKPOINT");
      break;
    case Change::kFreeze:
      if (!FreezeOneKey(&run, &states, &key)) RC_DISCARD("no trainable parameter to freeze");
      save(run, states, "every instance of " + key + " frozen");
      CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, 1));
      save(run, states, "new data");
      break;
    case Change::kAddParameter: {
      const int64_t at = states.front().iteration;
      run = grown;
      CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &states));
      CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, at));
      save(run, states, "model of module 0 with " + how);
      CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, 1));
      save(run, states, "new data");
      break;
    }
  }
  RC_LOG() << "  resume every successful save with its run's templates; compare with the spec\n";
  RC_TAG(ChangeName(change));
  RC_CLASSIFY(structure_grew_before_the_change,
              "the second save's structure grew (optimizer state from the first step)");
  RC_CLASSIFY(async, "async");
  RC_CLASSIFY(ShapeOf(run).heterogeneous, "heterogeneous");
  RC_CLASSIFY(ShapeOf(run).dp_reshardable, "dp_reshardable");

  for (const SaveRecord& rec : saves) {
    if (!rec.status.ok()) {
      RC_TAG("a save failed loudly");
      continue;
    }
    ResumeOptions resume;
    resume.iteration = rec.iteration;
    std::vector<TrainingState> loaded, expected;
    const Status loaded_status = ResumeRun(target, rec.run, resume, &loaded);
    if (!loaded_status.ok()) {
      RC_FAIL("save of iteration " + std::to_string(rec.iteration) +
              " succeeded but does not resume: " + loaded_status.ToString());
    }
    CKPTSPEC_RC_ASSERT_OK(ExpectedResume(rec.run, rec.states, rec.run, resume.flags, &expected));
    CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(loaded, expected),
                            "save of iteration " + std::to_string(rec.iteration) +
                                " resumes to another state than the spec's");
  }
}

}  // namespace ckptspec
