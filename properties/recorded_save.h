// A save recorded on the real disk (crash/fs_recorder.h), for the disk forms of P13 and P14: a
// committed save of iteration a, then the save of b with the storage recorder on (and a storage
// fault armed, when one is given), the operations it did, and how it ended.
//
// Contracts:
//  - RecordSave runs on a fresh target of `factory` (factory.disk_faults) and gives the target
//    back before it returns: every rank process is shut down or reset, so nothing of it runs on.
//  - The recording covers b's save from Save to the return of the Finalize that completes it (an
//    async save's background write included); `completed_after` is the number of recorded
//    operations when the save reported success (ops.size()), unset when it did not.
//  - A recording whose operations cannot all be followed (FsOpKind::kUnseen) is returned as it is;
//    EnumerateCrashStates refuses it, naming what was not seen.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crash/fs_op.h"
#include "crash/fs_recorder.h"
#include "crash/initial_tree.h"
#include "model/run_spec.h"
#include "harness/storage_util.h"
#include "targets/target_factory.h"

namespace ckptspec {

struct RecordedSave {
  InitialTree before;                       // the checkpoint root after a's save, before b's
  std::vector<FsOp> ops;                    // what b's save did under the root, in completion order
  Status saved;                             // what b's Save (then its Finalize) returned
  std::optional<uint64_t> completed_after;  // recorded operations when b's save reported success
  uint64_t faults_injected = 0;             // storage faults the interposer delivered
  StorageTree after;  // the checkpoint root once b's save had ended (as the live tree reads)
};

// What both disk forms draw (inside a RapidCheck property only): a run; a in 0..2 and b in
// a+1..a+2; whether b's save is async (where the target has async saves); the states at a and b.
struct TwoSaves {
  RunSpec run;
  int64_t a = 0;
  int64_t b = 0;
  bool async = false;
  std::vector<TrainingState> at_a, at_b;
};
TwoSaves DrawTwoSaves(const TargetFactory& factory);
// "train 0, save (sync), train to 2, save (async, completed by Finalize)".
std::string DescribeTwoSaves(const TwoSaves& saves);

// The bound on a checkpoint root's content that RecordSave snapshots (InitialTree).
inline constexpr uint64_t kMaxRecordedRootBytes = 256ull << 20;

// Saves saves.at_a (sync, committed) then saves.at_b (sync or async) on a fresh target made with
// `options`, recording b's save with `fault` armed (DiskFaultKind::kNone: no fault). Errors: a's
// save, the snapshot, the recorder's; b's save's own outcome is in out->saved.
Status RecordSave(const TargetFactory& factory, const TargetOptions& options, const TwoSaves& saves,
                  const DiskFault& fault, RecordedSave* out);

}  // namespace ckptspec
