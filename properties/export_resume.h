// P3's export form (docs/PROPERTIES.md, P3; docs/SEMANTICS.md §10): a checkpoint exported into one
// consolidated file (Target::checkpoint_export), imported into fresh storage, and resumed from
// there in a new process under another layout must give exactly what the spec says a resume from
// the checkpoint itself gives.
#pragma once

#include <string>
#include <vector>

#include "model/run_spec.h"
#include "targets/target_factory.h"

namespace ckptspec {

// On a fresh target of `factory`: the framework's dicts of `states` (a run of `saved_run`) saved
// synchronously at their iteration and finalized; a new process exports that checkpoint into one
// file beside the target's root; a second fresh target imports the file, and a new process of it
// resumes `run` under `flags`. Compared with ExpectedResume(saved_run, states, run, flags): ""
// when the target agrees with the spec (both refuse, or both give the same states), else the
// failing call or the first difference, in words. *applied is false, and nothing runs, where the
// target has no export (checkpoint_export() is null: adapters).
std::string ExportResumeDifference(const TargetFactory& factory, const RunSpec& saved_run,
                                   const std::vector<TrainingState>& states, const RunSpec& run,
                                   const LoadFlags& flags, bool* applied);

}  // namespace ckptspec
