// The forms of the fault properties with several async saves in flight (docs/SEMANTICS.md §3,
// "Several async saves in flight"), for targets that declare Capabilities::overlapping_async and
// inject faults into an in-memory Env: P13 crashes a schedule of overlapping saves under
// retention, P14 runs one over the training loop's own dicts with write failures. The catalog's
// CheckCrashConsistency and CheckAsyncIsolation run them in a quarter of their cases on such
// targets (properties/saves_in_flight.h has the schedule and the rule).
#pragma once

#include "targets/target_factory.h"

namespace ckptspec {

void CheckCrashWithSavesInFlight(const TargetFactory& factory);      // P13, several in flight
void CheckIsolationWithSavesInFlight(const TargetFactory& factory);  // P14, several in flight

}  // namespace ckptspec
