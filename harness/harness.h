// The harness every property runs on: the checkpoint I/O of a training run through a target (its
// framework layer and its engine). The target under test, made fresh for each case by a factory,
// is targets/target_factory.h's.
//
// Contracts:
//  - SaveRun / ResumeRun do exactly what a training framework does around its checkpointer:
//    framework dicts -> Engine::Save; Engine::Load of the common state first (to learn the saving
//    layout and sharding), templates for the new run, Engine::Load, framework rebuild.
//  - The specification's answer for the same resume is ExpectedResume (model/run_spec.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/run_spec.h"
#include "targets/target.h"

namespace ckptspec {

// Every rank's dicts from the target's framework, then Engine::Save.
Status SaveRun(Target& target, const RunSpec& run, const std::vector<TrainingState>& states,
               int64_t iteration, const SaveOptions& options);

// Writes `fresh` into the caller's live save input `live` in place, as a training step writes into
// the parameters its state dict's tensors are views of: where a rank's entry at the same position
// has the same spec, a tensor's bytes go into the existing buffer (never reallocated) and an
// object's bytes are replaced; every rank's common state is replaced. Entries that no longer match
// (a structure changed since) are left as they are. Returns how many tensors were written.
size_t WriteStateInPlace(const std::vector<ShardedStateDict>& fresh,
                         std::vector<ShardedStateDict>* live);

struct ResumeOptions {
  LoadFlags flags;
  StrictMode strict = StrictMode::kAssumeOkUnexpected;
  std::optional<int64_t> iteration;  // nullopt: the tracker's
};

// Resumes `run` (possibly another layout or config than the save's) from the target's storage.
// *info receives what the framework read of the checkpoint's common state.
Status ResumeRun(Target& target, const RunSpec& run, const ResumeOptions& options,
                 std::vector<TrainingState>* states, CheckpointInfo* info = nullptr);

// A reload in the same process (a rollback after a loss spike, an eval that reloads): the load of
// ResumeRun on the process's own target, whose framework and engine keep whatever they hold in
// memory (no TargetUnderTest::NewProcess), with the process's training states `live` handed to
// the framework (LoadedCheckpoint::live). The spec's answer is a fresh process's: ExpectedResume
// of the reloaded checkpoint under `run` (docs/SEMANTICS.md §10). *states is set only on success.
Status ReloadInProcess(Target& target, const RunSpec& run, const std::vector<TrainingState>& live,
                       const ResumeOptions& options, std::vector<TrainingState>* states);

// A live recovery (a replica joining from a peer, as fault-tolerant trainers heal): `joiner`'s
// framework loads `run` from the per-rank dicts a peer's framework produced (ToStateDicts), with
// no flags and no storage in between: its templates for `run`'s layout are filled from the dicts'
// main replicas (ResolveFromSaved), then FromStateDicts. Errors: the framework's, or an entry the
// dicts lack.
Status JoinFromPeer(const FrameworkLayer& joiner, const RunSpec& run,
                    const std::vector<ShardedStateDict>& peer_dicts,
                    std::vector<TrainingState>* states);

}  // namespace ckptspec
