// Targets served by adapter processes (docs/PROTOCOL.md): the canonical framework layer over a
// ProcessEngine, so every property of the catalog runs against an adapter unchanged.
//
// Contracts:
//  - AdapterTargetFactory probes the adapter once (one rank: hello, shutdown) for the capabilities
//    it declares; a probe that fails is the error, with the adapter's verdict.
//  - Each target made owns two fresh temporary directories "ckptspec-adapter-<pid>-..." (mode
//    0700, named after their owner: targets/process/owned_temp_dir.h): one under $TMPDIR (else
//    /tmp) holding the adapter's checkpoint directory ckpt/, the storage under test; one under
//    $CKPTSPEC_SCRATCH_DIR, else /dev/shm when it is writable, else beside the first, for the
//    harness's scratch files. They are removed when the target is destroyed (after the adapter
//    processes are shut down), never following a link the adapter left in them, and registered
//    so that a termination signal to ckptspec removes them too
//    (targets/process/cleanup_registry.h). AdapterTargetFactory first removes, from those two
//    places, the directories a ckptspec killed outright left behind.
//  - The made targets record their processes' timeouts and leftovers in TargetOptions::events.
//  - Live groups (docs/PROTOCOL.md, revision 2): when the adapter declares reset and
//    fresh_processes is false, the targets one factory makes share a pool of rank groups
//    (targets/process/rank_group_pool.h), started once and reset between cases; the pool lives as
//    long as the factory and the targets it made.
//  - NewProcess() gives the adapter processes back (shut down, or reset into the pool) and gives
//    a new engine over the same checkpoint directory: the next call starts new processes, or takes
//    reset ones.
//  - The target's name is AdapterOptions::name; else kAdapterTargetPrefix and the name the
//    adapter gives itself in hello ("adapter": a name of letters, digits, '.', '_' and '-'); else
//    kAdapterTargetPrefix and the command's first word that is not an interpreter (python, sh,
//    env, ...), without directory or extension.
//  - A framework adapter (its hello declares "framework", docs/PROTOCOL.md revision 5) makes a
//    framework target instead (TargetFactory::make_framework, targets/process/process_framework.h):
//    each one a checkpoint directory of its own under $TMPDIR (else /tmp), removed at the end;
//    the same pool of live groups; only the properties' framework forms run on it.
//  - The storage is the real disk, not a MemEnv: mem_env() is null and fault_injection false, so
//    P17 and P18 are n/a. Unless record_storage is false (or the adapter is a framework adapter),
//    every rank runs under the storage recorder (crash/fs_recorder.h: an LD_PRELOAD interposer,
//    passive until a property records a save) and the targets have disk_faults: P13 builds crash
//    states from what the ranks did, P14 injects storage faults into a save, P16 corrupts the
//    files. When the recorder cannot be made, disk_faults is false and disk_faults_missing says
//    why. TargetOptions (deferred async, retention) are engine settings no protocol message
//    carries; the adapter uses its own.
//  - Launched ranks (launched_ranks > 0, docs/SCALE.md): the command is not run. The factory
//    listens on `listen` (targets/process/coordinator.h), writes `coordinator_file` for the ranks,
//    waits up to connect_timeout_s for launched_ranks ranks an outside launcher (torchrun, srun)
//    started, and serves every target it makes from that one pool (RankGroupPool::Launched): a
//    case of k ranks runs on k of them, in a process group of its own. The first group (all the
//    ranks) says hello in place of the probe. The storage recorder is not used (its interposer
//    runs only in processes ckptspec starts): disk_faults is false. The roots of the checkpoint
//    and scratch directories must be seen by every host: `shared_dir` when set.
#pragma once

#include <string>

#include "targets/target_factory.h"

namespace ckptspec {

// What the name of an adapter's target starts with, unless AdapterOptions::name is set.
inline constexpr char kAdapterTargetPrefix[] = "adapter:";

struct AdapterOptions {
  std::string command;           // run by /bin/sh -c, once per rank
  std::string name;              // the target's name; empty: see the contract above
  double timeout_s = 60;         // per request
  bool fresh_processes = false;  // never reuse rank processes across engines, even with reset
  bool record_storage = true;    // run the ranks under the storage recorder (disk_faults)
  // Ranks an outside launcher started (see the contracts); 0: ckptspec starts the ranks.
  int launched_ranks = 0;
  std::string listen = "127.0.0.1:0";  // the coordinator's address (HOST:PORT; port 0: any)
  std::string coordinator_file;        // where the address and the token are written
  double connect_timeout_s = 600;      // how long the launched ranks may take to dial in
  // A directory every host sees: the checkpoint and scratch directories are made under it
  // (empty: $TMPDIR, and $CKPTSPEC_SCRATCH_DIR or /dev/shm).
  std::string shared_dir;
};

Status AdapterTargetFactory(const AdapterOptions& options, TargetFactory* out);

}  // namespace ckptspec
