#include "properties/scenarios.h"

#include <utility>

#include "harness/harness.h"

namespace ckptspec {
namespace {

Status Different(const std::string& what, const std::string& difference) {
  if (difference.empty()) return Status::OK();
  return Status::FailedPrecondition(what + ": " + difference);
}

// Saves `states` of `run` on `under_test` (async or not), completes the save and restarts the
// process: what a job does that checkpoints and is then stopped and launched again.
Status SaveAndRestart(TargetUnderTest* under_test, const RunSpec& run,
                      const std::vector<TrainingState>& states, bool async,
                      const SaveDictsCheck& inspect) {
  Target& target = under_test->target();
  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RETURN_IF_ERROR(target.framework()
                               .ToStateDicts(run.layout, states, run.sharding, &dicts)
                               .WithContext("framework"));
  if (inspect) CKPTSPEC_RETURN_IF_ERROR(inspect(dicts));
  SaveOptions save;
  save.async = async;
  CKPTSPEC_RETURN_IF_ERROR(
      target.engine().Save(states.front().iteration, std::move(dicts), save).WithContext("save"));
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Finalize().WithContext("Finalize"));
  under_test->NewProcess();
  return Status::OK();
}

}  // namespace

Status ResumeEquivalenceScenario(const TargetFactory& factory, const RunSpec& run, int64_t k,
                                 int64_t m, bool async) {
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(run, &states).WithContext("InitialStates"));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(&states, k).WithContext("train before the save"));

  auto under_test = factory.make(TargetOptions());
  CKPTSPEC_RETURN_IF_ERROR(SaveAndRestart(under_test.get(), run, states, async, nullptr));
  std::vector<TrainingState> resumed;
  CKPTSPEC_RETURN_IF_ERROR(ResumeRun(under_test->target(), run, ResumeOptions(), &resumed)
                               .WithContext("ResumeRun in the new process"));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(&resumed, m).WithContext("train after the resume"));

  std::vector<TrainingState> uninterrupted;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(run, &uninterrupted));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(&uninterrupted, k + m).WithContext("uninterrupted training"));
  return Different("resumed run differs from the uninterrupted one",
                   FirstRunDifference(resumed, uninterrupted));
}

Status RoundTripScenario(const TargetFactory& factory, const RunSpec& run, int64_t k) {
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(run, &states).WithContext("InitialStates"));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(&states, k).WithContext("train before the save"));

  auto under_test = factory.make(TargetOptions());
  CKPTSPEC_RETURN_IF_ERROR(SaveAndRestart(under_test.get(), run, states, false, nullptr));
  std::vector<TrainingState> loaded;
  CKPTSPEC_RETURN_IF_ERROR(ResumeRun(under_test->target(), run, ResumeOptions(), &loaded)
                               .WithContext("ResumeRun in the new process"));
  std::vector<TrainingState> expected;
  for (const TrainingState& s : states) expected.push_back(Restarted(s));
  return Different("loaded state differs from the saved one", FirstRunDifference(loaded, expected));
}

Status SaveRestartResume(const TargetFactory& factory, const RunSpec& saved_run,
                         const std::vector<TrainingState>& states, const RunSpec& run,
                         const LoadFlags& flags, RestartedResume* out,
                         const SaveDictsCheck& inspect) {
  auto under_test = factory.make(TargetOptions());
  CKPTSPEC_RETURN_IF_ERROR(SaveAndRestart(under_test.get(), saved_run, states, false, inspect));
  out->spec = ExpectedResume(saved_run, states, run, flags, &out->expected);
  ResumeOptions options;
  options.flags = flags;
  out->got = ResumeRun(under_test->target(), run, options, &out->resumed);
  return Status::OK();
}

}  // namespace ckptspec
