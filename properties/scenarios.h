// The scenarios of P1 and P2 on a given run, as plain functions: the RapidCheck properties
// (p01, p02) generate the run and assert on the result; the regression replay (regression_case.h)
// runs them on a kept run.
#pragma once

#include <cstdint>

#include "model/run_spec.h"
#include "targets/target_factory.h"

namespace ckptspec {

// P1: train k, save (async or not) on a fresh target, resume on the same layout without flags,
// train m; OK when that equals training k + m uninterrupted, else an error naming the failing call
// or the first difference ("resumed run differs from the uninterrupted one: ...").
Status ResumeEquivalenceScenario(const TargetFactory& factory, const RunSpec& run, int64_t k,
                                 int64_t m, bool async);

// P2: train k, save on a fresh target, load on the same layout; OK when every state class comes
// back unchanged (as a restarted process holds it), else an error naming the call or difference.
Status RoundTripScenario(const TargetFactory& factory, const RunSpec& run, int64_t k);

}  // namespace ckptspec
