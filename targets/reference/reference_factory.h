// Factories (targets/target_factory.h) of the reference target under test, with no parts replaced
// (the reference itself) or with the parts a mutant replaces (targets/mutants/mutant_target.h),
// and of a target whose engine is the caller's (an in-process wrapper of a real engine).
//
// Contracts:
//  - Every target a factory makes lives on a fresh MemEnv of its own, under one checkpoint root,
//    with the TargetOptions' async execution and retention: fault injection works
//    (TargetFactory::fault_injection). ReferenceTargetFactory's and ReplacedPartsTargetFactory's
//    targets are ReferenceTargets (reference_target.h).
//  - NewProcess builds a fresh target over the same storage, with fresh parts (the replaced parts
//    are made again: a deviation is code, so it persists; whatever a part cached in memory does
//    not). A target's first process is process 0 and each NewProcess makes the next one
//    (MakeParts, reference_target.h): the parts of a target's processes are the same whatever was
//    made before in the OS process.
//  - The factory's capabilities are those of the engine of a target made with default options.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "targets/reference/format.h"
#include "targets/reference/reference_target.h"
#include "targets/target_factory.h"

namespace ckptspec {

// The reference, saving in the given index layout (format.h): named "reference" for the single
// index, "reference-per-writer" for the per-writer one.
TargetFactory ReferenceTargetFactory(IndexLayout layout = IndexLayout::kSingle);

// The reference named `name`, saving in the single index layout, with the parts
// `replaced(process)` makes (called for every target's process 0 and every new process) in place
// of its own. Its expectation is left as the reference's (not expect_killed); a mutant's factory
// sets it.
TargetFactory ReplacedPartsTargetFactory(const std::string& name, MakeParts replaced);

// The reference engine's options for one process of a target: it works on `env` under `root`,
// keeps `options.keep_last` checkpoints, holds up to `options.max_async_in_flight` async saves in
// flight and completes them at Poll/Finalize/Save/Load when `options.deferred_async` (else on a
// thread); every other option is the default.
ReferenceOptions ReferenceOptionsFor(Env* env, const std::string& root,
                                     const TargetOptions& options);

// Makes an engine for one process of a target: it works on `env` under `root` (the target's
// MemEnv, which outlives the engine) and honours `options` where it can (deferred_async: async
// saves complete only at Finalize/Save/Load; keep_last).
using MakeEngine = std::function<std::unique_ptr<Engine>(Env* env, const std::string& root,
                                                         const TargetOptions& options)>;
// A target named `name` of the canonical framework and the engine `make_engine` makes (called for
// every target and every new process). Its expectation is clean (not expect_killed).
TargetFactory EngineTargetFactory(const std::string& name, MakeEngine make_engine);

}  // namespace ckptspec
