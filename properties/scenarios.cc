#include "properties/scenarios.h"

#include "properties/harness.h"

namespace ckptspec {
namespace {

Status Different(const std::string& what, const std::string& difference) {
  if (difference.empty()) return Status::OK();
  return Status::FailedPrecondition(what + ": " + difference);
}

}  // namespace

Status ResumeEquivalenceScenario(const TargetFactory& factory, const RunSpec& run, int64_t k,
                                 int64_t m, bool async) {
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(run, &states).WithContext("InitialStates"));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(&states, k).WithContext("train before the save"));

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  SaveOptions save;
  save.async = async;
  CKPTSPEC_RETURN_IF_ERROR(
      SaveRun(target, run, states, states.front().iteration, save).WithContext("SaveRun"));
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Finalize().WithContext("Finalize"));

  std::vector<TrainingState> resumed;
  CKPTSPEC_RETURN_IF_ERROR(
      ResumeRun(target, run, ResumeOptions(), &resumed).WithContext("ResumeRun"));
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
  Target& target = under_test->target();
  CKPTSPEC_RETURN_IF_ERROR(
      SaveRun(target, run, states, states.front().iteration, SaveOptions()).WithContext("SaveRun"));
  std::vector<TrainingState> loaded;
  CKPTSPEC_RETURN_IF_ERROR(
      ResumeRun(target, run, ResumeOptions(), &loaded).WithContext("ResumeRun"));
  std::vector<TrainingState> expected;
  for (const TrainingState& s : states) expected.push_back(Restarted(s));
  return Different("loaded state differs from the saved one", FirstRunDifference(loaded, expected));
}

}  // namespace ckptspec
