// The three worked examples of docs/PLUGINS.md, each a target factory; plugin.cc registers them
// with what `ckptspec run` expects of each.
#pragma once

#include "targets/target_factory.h"

namespace example {

// A framework-layer mutant: forgets the data iterator's position on load (killed).
ckptspec::TargetFactory DataIteratorLosingTarget();
// An engine-step mutant: the index records only the coordinator's entries (killed).
ckptspec::TargetFactory CoordinatorOnlyIndexTarget();
// An in-process wrapper of an engine that stamps the save time into the metadata (P17 fails, as
// listed; every other property passes).
ckptspec::TargetFactory TimestampingEngineTarget();

}  // namespace example
