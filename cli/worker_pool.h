// The worker processes of `ckptspec run --jobs N` (cli/run_command.h). RapidCheck keeps its state
// in globals (it is not thread-safe), so properties run in parallel in forked processes, not
// threads: each worker is a copy of ckptspec (targets, plugins, options included) that runs the
// tasks it is handed and sends each outcome back (cli/outcome_wire.h).
//
// Contracts:
//  - RunInWorkers runs task i = run(i) for every i < count in up to `jobs` forked workers and
//    returns the outcomes in task order, whatever order they finished in. A worker is handed its
//    next task when it returns a result, so a slow task holds back no other.
//  - `run` runs in the worker, never in the caller's process: what it changes there is lost. It
//    must not write to the caller's output streams. The caller's process is single-threaded when
//    it calls RunInWorkers (fork copies only the calling thread).
//  - `done(i, outcome)` runs in the caller's process after each task's outcome arrives (progress).
//  - A worker that dies (a crash of the target under test, a signal) or sends something that does
//    not decode gives its task an error outcome (Verdict::kError) that says how it ended; the
//    other tasks go on in the remaining workers and a fresh one. A task that throws
//    std::bad_alloc ends its worker likewise ("ran out of memory"): no exception leaves `run`.
//  - Every worker has exited and been waited for when RunInWorkers returns.
//  - No worker outlives the caller's process, however it ends (SIGKILL included): each asks the
//    kernel for SIGKILL when its parent ends (PR_SET_PDEATHSIG), then checks that the parent is
//    still the one that forked it. The kernel sends that signal when the *thread* that forked the
//    worker ends, not the process: RunInWorkers forks every worker, fresh ones included, on the
//    calling thread, which stays in it until every worker has been reaped, so the signal comes
//    only with the process's end.
//  - A worker starts with an empty signal mask and the termination signals' default actions
//    (cleanup_registry.h RestoreTerminationSignals: ckptspec blocks them for a signal thread
//    the fork does not copy), so a plain kill ends it. SIGPIPE stays ignored, as RunInWorkers
//    sets it for the caller.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runner/runner.h"

namespace ckptspec {

std::vector<PropertyOutcome> RunInWorkers(
    size_t count, int jobs, const std::function<PropertyOutcome(size_t)>& run,
    const std::function<void(size_t, const PropertyOutcome&)>& done);

}  // namespace ckptspec
