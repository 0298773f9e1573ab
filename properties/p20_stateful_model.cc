// P20, the stateful model-based test as a catalog property (stateful_commands.h): a generated
// run and a generated sequence of job operations -- train, save (sync or async, plan cache on or
// off), finalize, a rerun fault, a crash at a storage operation, a restart under the same run,
// another layout and flags, or one more parameter, a freeze, a reload of an older checkpoint in
// the same process -- run against the specification and a fresh target. After every operation
// the target's status is OK exactly when the spec's is, and the process's training states equal
// the spec's; a restart resumes what ExpectedResume says for the committed checkpoint, and a
// reload what it says for the reloaded one, whatever the process trained or cached since. Frozen
// sets change between save and resume (Freeze, then Restart), so `ckptspec run` exercises them
// on every target.
// On a target that holds several async saves at once, each case draws a bound of 1 to 3 saves in
// flight and retention (keep_last 0 to 2): saves overlap (an async Save drawn where another is
// in flight), a crash falls between any two of their commits, and a Reload or Restart finds
// exactly the checkpoints docs/SEMANTICS.md §3 says survive, with their states.
// Each operation applies only where the target can take it: Crash needs fault injection, a
// restart under another layout needs resharding, async saves and the plan cache their
// capabilities; on an adapter the remaining operations run.
// Catches: the bugs its entry in properties/catalog.cc names (docs/BUGS.md).
#include "properties/property.h"
#include "properties/stateful_commands.h"

namespace ckptspec {

void CheckStatefulModel(const TargetFactory& factory) { CheckStateful(factory); }

}  // namespace ckptspec
