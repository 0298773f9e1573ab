// P13 with several async saves in flight (docs/SEMANTICS.md §3, "Several async saves in flight"):
// a run saves at iteration a (sync, committed), then schedules 2 or 3 async saves with training in
// between, at most `bound` in flight (an async Save with the bound reached completes the oldest
// first), polling after some, and finalizes; retention keeps keep_last > 0 checkpoints. A crash
// falls at a random storage operation of all that, then the power is lost. A fresh process on the
// surviving storage resumes the checkpoint of a save st no earlier than the last one that had
// reported success, with exactly its state; every checkpoint the rule says must survive -- st's
// and the keep_last newest of a and the saves up to st -- loads by its iteration with its state;
// and the run goes on: the next save commits and resumes.
// Catches: retention that counts or runs for a save still in flight (B30), saves that commit out of
// schedule order, a tracker moved to a save whose files are incomplete, B19 (a crash during an
// async completion reported as success).
#include <algorithm>

#include "generators/run_gen.h"
#include "properties/in_flight_forms.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/saves_in_flight.h"
#include "harness/storage_util.h"

namespace ckptspec {

namespace {

// What a case saves: iteration a's states, then each async save's, with their iterations.
struct ScheduledRun {
  RunSpec run;
  int64_t a = 0;
  std::vector<TrainingState> at_a;
  InFlightSchedule schedule;
  std::vector<int64_t> iterations;
  std::vector<std::vector<TrainingState>> at;
};

// Saves a (sync, committed), then from storage operation 0 on (the env's count reset, a crash
// armed at `crash_at` when >= 0) runs the schedule through `driver` and finalizes, stopping at the
// first call that fails. Returns that call's status.
Status RunScheduledSaves(TargetUnderTest& under_test, const ScheduledRun& r, int64_t crash_at,
                         InFlightDriver* driver) {
  Target& target = under_test.target();
  MemEnv* env = under_test.mem_env();
  CKPTSPEC_RETURN_IF_ERROR(SaveRun(target, r.run, r.at_a, r.a, SaveOptions()));
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Finalize());
  env->ResetOpCount();
  if (crash_at >= 0) env->CrashAtOp(crash_at);
  SaveOptions async;
  async.async = true;
  for (size_t j = 0; j < r.schedule.saves(); ++j) {
    CKPTSPEC_RETURN_IF_ERROR(
        driver->Save([&] { return SaveRun(target, r.run, r.at[j], r.iterations[j], async); }));
    if (r.schedule.poll_after[j]) CKPTSPEC_RETURN_IF_ERROR(driver->Poll());
  }
  return driver->Finalize();
}

}  // namespace

void CheckCrashWithSavesInFlight(const TargetFactory& factory) {
  ScheduledRun r;
  r.run = *gen::RunUpTo(8);
  r.a = *rc::gen::inRange<int64_t>(0, 3);
  r.schedule = DrawInFlightSchedule(/*bound_covers_saves=*/false);
  CKPTSPEC_RC_ASSERT_OK(InitialStates(r.run, &r.at_a));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&r.at_a, r.a));
  std::vector<TrainingState> states = r.at_a;
  for (int64_t steps : r.schedule.steps) {
    CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, steps));
    r.at.push_back(states);
    r.iterations.push_back(states.front().iteration);
  }
  TargetOptions options;
  options.deferred_async = true;
  options.keep_last = r.schedule.keep_last;
  options.max_async_in_flight = r.schedule.bound;

  int64_t ops = 0;
  {
    auto dry = factory.make(options);
    InFlightDriver driver(&dry->target().engine(), r.schedule.bound);
    CKPTSPEC_RC_ASSERT_OK(RunScheduledSaves(*dry, r, -1, &driver));
    ops = dry->mem_env()->op_count();
  }
  // Where the crash falls: in one case of ten after the last operation (nothing crashes), else
  // uniform over the schedule's operations (the size pinned, as in the two-save form).
  const bool after_all = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, 10)) == 0;
  const int64_t k =
      after_all ? ops : *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(0, ops + 1));
  RC_LOG() << "scenario:\n  " << DescribeRun(r.run) << "\n  train " << r.a << ", save (sync); then "
           << DescribeInFlightSchedule(r.schedule, r.iterations)
           << ", training between them; finalize; crashing at operation " << k << " of the " << ops
           << "; power loss; restart on the surviving storage and resume\n";
  RC_TAG("several async saves in flight");
  RC_TAG("keep_last " + std::to_string(r.schedule.keep_last));

  auto crashed = factory.make(options);
  InFlightDriver driver(&crashed->target().engine(), r.schedule.bound);
  const Status saved = RunScheduledSaves(*crashed, r, k, &driver);
  RC_LOG() << "  the calls:\n"
           << driver.trace() << "  the first failing: " << saved.ToString()
           << "; saves that had reported success: " << driver.reported() << " of "
           << r.schedule.saves() << "\n";
  MemEnv* env = crashed->mem_env();
  env->SimulatePowerLoss();
  env->ClearFaults();

  std::unique_ptr<TargetUnderTest> restarted;
  std::string surviving;
  CKPTSPEC_RC_ASSERT_OK(RestartOnCopy(factory, options, *crashed, &restarted, &surviving));
  RC_LOG() << "  surviving storage: " << surviving << "\n";
  Target& target = restarted->target();
  // The saves in schedule order, a first; the crash is the only fault, so none failed before it.
  std::vector<int64_t> saves{r.a};
  saves.insert(saves.end(), r.iterations.begin(), r.iterations.end());
  size_t t = 0;
  const std::string violation =
      JudgeSurvivors(target, r.run, saves, std::vector<bool>(saves.size(), false),
                     driver.reported(), r.schedule.keep_last, &t);
  if (t < saves.size()) RC_LOG() << "  the tracker names iteration " << saves[t] << "\n";
  RC_CLASSIFY(t < r.schedule.saves(), "several in flight, the tracker on a save before the last");
  if (!violation.empty()) RC_FAIL(violation);

  // The run goes on: the next save cleans up after the crash, commits and resumes.
  std::vector<TrainingState> at_c = r.at.back();
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_c, 1));
  const int64_t c = at_c.front().iteration;
  CKPTSPEC_RC_ASSERT_OK(SaveRun(target, r.run, at_c, c, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());
  std::vector<TrainingState> after, expected;
  CKPTSPEC_RC_ASSERT_OK(ResumeRun(target, r.run, ResumeOptions(), &after));
  CKPTSPEC_RC_ASSERT_OK(ExpectedAtIteration(r.run, c, &expected));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(after, expected), "the save after the restart");
}

}  // namespace ckptspec
