// P14 on the real disk: a run saves at iteration a (committed), trains to b and saves again (sync,
// or async where the target has it) while the storage recorder injects one storage fault into the
// processes' operations under the root: ENOSPC or EIO from the nth write, a short write (half the
// bytes), or EIO from the nth fsync/fdatasync; once, or from the nth on (a full disk). Then:
//  - a failed write or fsync reaches the caller: the save (its Save, or the Finalize completing
//    it) does not report success -- except a write fault the target recovered from (not sticky),
//    when its checkpoint then resumes exactly; a failed fsync is never recovered from (the kernel
//    may have dropped the unsynced pages, so a retry proves nothing);
//  - a save that reports success resumes exactly, by the tracker, from fresh processes;
//  - whatever the outcome, fresh processes on what the disk holds resume exactly a or b by the
//    tracker, and a by its iteration (the previous checkpoint survives a failed save).
// A fault the save never reaches (nth past its operations) makes the case a control: the save
// must succeed.
// Catches: write or fsync errors swallowed (B19's storage form), a tracker published after a
// failed write, a failed save that leaves the previous checkpoint unloadable.
#include "properties/disk_forms.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/recorded_save.h"

namespace ckptspec {

namespace {

// Resumes on fresh processes over a copy of `tree`, by the tracker or by `iteration`.
Status ResumeFrom(const TargetFactory& factory, const StorageTree& tree, const RunSpec& run,
                  std::optional<int64_t> iteration, std::vector<TrainingState>* resumed) {
  std::unique_ptr<TargetUnderTest> fresh = factory.make(TargetOptions());
  CKPTSPEC_RETURN_IF_ERROR(WriteTree(fresh->storage_env(), fresh->root(), tree));
  ResumeOptions options;
  options.iteration = iteration;
  return ResumeRun(fresh->target(), run, options, resumed);
}

// Fails unless `resumed` is exactly the checkpoint of `iteration`.
void AssertCheckpointOf(const RunSpec& run, int64_t iteration,
                        const std::vector<TrainingState>& resumed, const std::string& what) {
  RC_ASSERT(resumed.front().iteration == iteration);
  std::vector<TrainingState> expected;
  CKPTSPEC_RC_ASSERT_OK(ExpectedAtIteration(run, iteration, &expected));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected), what);
}

}  // namespace

// How RapidCheck prints a drawn fault kind in a counterexample (found by argument-dependent
// lookup, so in the enum's namespace).
void showValue(DiskFaultKind kind, std::ostream& os) { os << DiskFaultKindName(kind); }

void CheckStorageFaultsOnDisk(const TargetFactory& factory) {
  const TwoSaves saves = DrawTwoSaves(factory);
  const RunSpec& run = saves.run;
  const int64_t a = saves.a, b = saves.b;
  DiskFault fault;
  fault.kind = *rc::gen::element(DiskFaultKind::kNoSpace, DiskFaultKind::kIoError,
                                 DiskFaultKind::kShortWrite, DiskFaultKind::kFsyncFails);
  fault.nth = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<uint64_t>(1, 25));
  fault.sticky = *rc::gen::arbitrary<bool>();
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  " << DescribeTwoSaves(saves) << " with "
           << DescribeDiskFault(fault) << "\n";

  RecordedSave recorded;
  CKPTSPEC_RC_ASSERT_OK(RecordSave(factory, TargetOptions(), saves, fault, &recorded));
  const bool injected = recorded.faults_injected > 0;
  RC_LOG() << "  " << recorded.faults_injected << " faults injected over " << recorded.ops.size()
           << " operations; the save returned: " << recorded.saved.ToString()
           << "\n  the disk holds " << DescribeTree(recorded.after) << "\n";
  RC_CLASSIFY(!injected, "fault not reached (control)");
  RC_TAG(DiskFaultKindName(fault.kind));
  RC_TAG(saves.async ? "async save" : "sync save");
  RC_TAG(recorded.saved.ok() ? "the save reported success" : "the save reported failure");

  if (!injected) CKPTSPEC_RC_ASSERT_OK(recorded.saved);
  const bool unrecoverable = fault.kind == DiskFaultKind::kFsyncFails ||
                             (fault.sticky && fault.kind != DiskFaultKind::kShortWrite);
  if (injected && unrecoverable && recorded.saved.ok()) {
    RC_FAIL(DescribeDiskFault(fault) + " was delivered, yet the save of iteration " +
            std::to_string(b) + " reported success");
  }
  std::vector<TrainingState> resumed;
  const Status by_tracker = ResumeFrom(factory, recorded.after, run, std::nullopt, &resumed);
  if (!by_tracker.ok()) {
    RC_FAIL("after the save (" + recorded.saved.ToString() +
            "), fresh processes do not resume by the tracker: " + by_tracker.ToString());
  }
  const int64_t got = resumed.front().iteration;
  RC_LOG() << "  resumed by the tracker: iteration " << got << "\n";
  if (recorded.saved.ok()) {
    AssertCheckpointOf(run, b, resumed, "the save reported success, but its checkpoint differs");
  } else {
    RC_ASSERT(got == a || got == b);
    AssertCheckpointOf(run, got, resumed, "after the failed save, the tracker's checkpoint");
  }
  std::vector<TrainingState> previous;
  const Status by_iteration = ResumeFrom(factory, recorded.after, run, a, &previous);
  if (!by_iteration.ok()) {
    RC_FAIL("the previous checkpoint (iteration " + std::to_string(a) +
            ") no longer loads: " + by_iteration.ToString());
  }
  AssertCheckpointOf(run, a, previous, "the previous checkpoint after the save");
}

}  // namespace ckptspec
