// P13, crash consistency: a run saves at iteration a (committed), trains to b and saves again
// (sync or async) with a crash at a random storage operation k of that save, then loses power.
// A fresh process on the surviving storage resumes exactly the state of a complete checkpoint:
// b's when b's save reported success, else a's or b's (b's save may have committed just before
// the crash), equal to the spec's expectation for that iteration. With retention (keep_last)
// cleanup never removes the last complete checkpoint, and the run can go on: the next save after
// the restart succeeds and resumes.
// Catches: a tracker written before the data, a missing fsync (file or directory), retention that
// deletes the tracker's checkpoint, leftovers of a crashed save read as a checkpoint; B19 (a crash
// during async completion that is reported as success).
// On a target whose storage is the real disk (TargetFactory::disk_faults) the disk form runs
// instead: crash states of a recorded save (properties/p13_crash_states_on_disk.cc). On a target
// that holds several async saves at once, a quarter of the cases crash a schedule of overlapping
// saves under retention (properties/p13_crash_saves_in_flight.cc).
#include <algorithm>

#include "generators/run_gen.h"
#include "properties/disk_forms.h"
#include "properties/in_flight_forms.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "harness/storage_util.h"

namespace ckptspec {

namespace {

// Saves a (sync, committed) then b on a fresh target and returns the number of storage
// operations of b's save, its completion (Finalize) included.
int64_t CountSaveOperations(const TargetFactory& factory, const TargetOptions& options,
                            const RunSpec& run, const std::vector<TrainingState>& at_a,
                            const std::vector<TrainingState>& at_b, bool async) {
  auto dry = factory.make(options);
  CKPTSPEC_RC_ASSERT_OK(SaveRun(dry->target(), run, at_a, at_a.front().iteration, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(dry->target().engine().Finalize());
  dry->mem_env()->ResetOpCount();
  SaveOptions save;
  save.async = async;
  CKPTSPEC_RC_ASSERT_OK(SaveRun(dry->target(), run, at_b, at_b.front().iteration, save));
  CKPTSPEC_RC_ASSERT_OK(dry->target().engine().Finalize());
  return dry->mem_env()->op_count();
}

}  // namespace

void CheckCrashConsistency(const TargetFactory& factory) {
  if (!factory.fault_injection) {
    CheckCrashConsistencyOnDisk(factory);
    return;
  }
  // A quarter of the cases of a target that holds several async saves at once crash a schedule of
  // them instead (properties/p13_crash_saves_in_flight.cc).
  if (factory.capabilities.overlapping_async &&
      *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, 4)) == 0) {
    CheckCrashWithSavesInFlight(factory);
    return;
  }
  const RunSpec run = *gen::RunUpTo(8);
  const int64_t a = *rc::gen::inRange<int64_t>(0, 3);
  const int64_t b = a + *rc::gen::inRange<int64_t>(1, 3);
  const bool async = factory.capabilities.async && *rc::gen::arbitrary<bool>();
  TargetOptions options;
  options.deferred_async = true;
  options.keep_last = *rc::gen::elementOf(std::vector<int>{0, 1, 2});

  std::vector<TrainingState> at_a, at_b;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &at_a));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_a, a));
  at_b = at_a;
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_b, b - a));

  const int64_t ops = CountSaveOperations(factory, options, run, at_a, at_b, async);
  // Where the crash falls, drawn first (swarm-style): in one case of ten right after the last
  // operation (k == ops: the save completed), else uniform over the save's operations or over its
  // last 40, where the commit (renames, tracker) and retention happen. The size is pinned so that
  // early cases are not biased toward the first operations.
  const int where = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, 10));
  const bool tail = where >= 5;
  const int64_t first = tail ? std::max<int64_t>(0, ops - 40) : 0;
  const int64_t k =
      where == 0 ? ops
                 : *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(first, ops + 1));
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  keep_last " << options.keep_last
           << "; train " << a << ", save (sync), train to " << b << ", save ("
           << (async ? "async, completed by Finalize" : "sync") << ") crashing at operation " << k
           << " of its " << ops << "; power loss; restart on the surviving storage and resume\n";
  RC_CLASSIFY(k == ops, "crash after the save");
  RC_TAG(k >= ops - 40 ? "crash in the last 40 operations" : "crash earlier");
  RC_TAG(async ? "async save" : "sync save");
  RC_TAG("keep_last " + std::to_string(options.keep_last));

  auto crashed = factory.make(options);
  Target& target = crashed->target();
  MemEnv* env = crashed->mem_env();
  CKPTSPEC_RC_ASSERT_OK(SaveRun(target, run, at_a, a, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());
  env->ResetOpCount();
  env->CrashAtOp(k);
  SaveOptions save;
  save.async = async;
  Status saved = SaveRun(target, run, at_b, b, save);
  if (saved.ok()) saved = target.engine().Finalize();
  const std::vector<std::string> log = env->op_log();
  RC_LOG() << "  the save returned: " << saved.ToString()
           << "; its last operation: " << (log.empty() ? std::string("none") : log.back()) << "\n";
  env->SimulatePowerLoss();
  env->ClearFaults();

  // A fresh process: a new target on a copy of what survived.
  std::unique_ptr<TargetUnderTest> restarted;
  std::string surviving;
  CKPTSPEC_RC_ASSERT_OK(RestartOnCopy(factory, options, *crashed, &restarted, &surviving));
  RC_LOG() << "  surviving storage: " << surviving << "\n";
  std::vector<TrainingState> resumed;
  CKPTSPEC_RC_ASSERT_OK(ResumeRun(restarted->target(), run, ResumeOptions(), &resumed));
  const int64_t got = resumed.front().iteration;
  RC_LOG() << "  resumed iteration " << got << "\n";
  RC_CLASSIFY(got == b, "resumed the crashed save's checkpoint");
  if (saved.ok()) {
    RC_ASSERT(got == b);  // a save that reported success survives the power loss
  } else {
    RC_ASSERT(got == a || got == b);
  }
  std::vector<TrainingState> expected;
  CKPTSPEC_RC_ASSERT_OK(ExpectedAtIteration(run, got, &expected));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected),
                          "resumed state differs from the checkpoint's iteration");

  // The run goes on: the next save cleans up after the crash, commits and resumes.
  std::vector<TrainingState> at_c = at_b;
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_c, 1));
  Target& next = restarted->target();
  CKPTSPEC_RC_ASSERT_OK(SaveRun(next, run, at_c, at_c.front().iteration, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(next.engine().Finalize());
  std::vector<TrainingState> after;
  CKPTSPEC_RC_ASSERT_OK(ResumeRun(next, run, ResumeOptions(), &after));
  CKPTSPEC_RC_ASSERT_OK(ExpectedAtIteration(run, b + 1, &expected));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(after, expected), "the save after the restart");
}

}  // namespace ckptspec
