// The disk forms of the fault properties, for targets whose storage is the real disk and whose
// processes run under the storage recorder (TargetFactory::disk_faults): P13 judges crash states
// built from a recorded save (crash/crash_states.h), P14 injects storage faults into a save
// (crash/fs_recorder.h). The catalog's CheckCrashConsistency and CheckAsyncIsolation call them for
// such targets; their in-memory forms run everywhere else.
#pragma once

#include "targets/target_factory.h"

namespace ckptspec {

void CheckCrashConsistencyOnDisk(const TargetFactory& factory);  // P13, disk form
void CheckStorageFaultsOnDisk(const TargetFactory& factory);     // P14, disk form

}  // namespace ckptspec
