// Generators of framework jobs (model/framework_job.h) inside what an adapter supports
// (model/framework_support.h), of the jobs that resume them, and of load flags.
//
// Contracts:
//  - JobWithin yields a job with ValidateFrameworkJob and CheckJobSupported OK, at most
//    min(max_world, support.max_world_size) ranks: one module, or (max_modules > 1) sometimes two
//    non-colocated ones ("vision" then "language"); TP, PP, CP and EP only where declared; tiny
//    models (hidden 16 to 64, 1 to 4 layers) of the declared features and dtypes; frozen patterns,
//    lr_mult and LR-bound overrides, decoupled LR, CPU offload, the distributed optimizer and the
//    formats only where declared; every scheduler style, sometimes with warmup and a rising weight
//    decay; every declared rerun mode and option; assume_constant_structure only with
//    `plan_cache`. Declared bounds never equal the scheduler's. Everything shrinks toward one
//    rank, the smallest model and no overrides.
//  - ResumeJobFor yields `saved` itself, or (change_layout) with each module on another layout
//    that fits its model, the support and max_world, and whose DP size divides the global batch.
//  - LoadFlagsWithin yields flags the adapter declared; override_scheduler and
//    use_checkpoint_scheduler together only when `allow_conflict`.
#pragma once

#include <ostream>

#include <rapidcheck.h>

#include "model/framework_job.h"
#include "model/framework_support.h"
#include "model/load_semantics.h"

namespace ckptspec {
namespace gen {

rc::Gen<FrameworkJob> JobWithin(const FrameworkSupport& support, bool plan_cache, int max_world);
rc::Gen<FrameworkJob> ResumeJobFor(const FrameworkJob& saved, const FrameworkSupport& support,
                                   int max_world, bool change_layout);
rc::Gen<LoadFlags> LoadFlagsWithin(const FrameworkSupport& support, bool allow_conflict);

// Inside a generator or property: true one time in n at every size, shrinking to false (the
// plainer case). (RapidCheck's inRange narrows its range at small sizes; a choice drawn through
// it would be rare everywhere but in the last cases of a run.)
bool OneIn(int n);

}  // namespace gen

void showValue(const FrameworkJob& job, std::ostream& os);

}  // namespace ckptspec
