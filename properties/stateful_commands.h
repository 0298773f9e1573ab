// The stateful model-based test (docs/DESIGN.md §8): the specification as the model, a target as the
// system under test, and the operations of a training job (stateful_ops.h) as rc::state commands.
// Each command generates its operation's arguments from the model (discarding itself with RC_PRE
// where none applies) and fails the case with the postcondition RunOp reports.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include "harness/stateful_ops.h"

namespace ckptspec {

using StatefulCommand = rc::state::Command<StatefulModel, StatefulSut>;

// One case of the stateful test: a generated run (gen::RunUpTo(8)), a fresh target from the
// factory, and a generated command sequence run against both: Crash only where the factory injects
// faults (mem_env()), a Restart under another layout only where the target reshards
// (capabilities.resharding), async saves and the plan cache only where declared. Adds what it
// executed to *stats when given. The catalog runs it as P20.
void CheckStateful(const TargetFactory& factory, StatefulStats* stats = nullptr);

}  // namespace ckptspec
