// ProcessEngine: the engine layer of targets/target.h served by adapter processes speaking the
// adapter protocol (docs/PROTOCOL.md). Each engine call becomes one request to every rank of a
// RankGroup whose world size is the call's number of ranks.
//
// Contracts (beyond Engine's):
//  - Groups start lazily: the first call starts one; a call with another number of ranks
//    finalizes the running group (returning a pending async save's error instead of proceeding),
//    gives it back and starts one of the new size over the same checkpoint directory.
//  - Without a pool, a group is started for the engine and given back by shutting it down. With
//    one (options.pool), groups are acquired from it and released to it (rank_group_pool.h): an
//    adapter that declared reset serves engine after engine, each in its own directory.
//  - Entry bytes travel through files of a fresh call directory under work_dir, named
//    "r<rank>.t<i>" (tensors) and "r<rank>.o<i>" (objects), or, for an adapter that declared
//    packed (revision 4), ranges of "r<rank>.<op>" (save and poll: every entry; load: the
//    tensors), removed when the call returns (so
//    an async save must have read them before it replied). The adapter is not trusted with them
//    (scratch_dir.h): inputs are created exclusively, never through a planted link; a loaded
//    entry is read back only from a regular file of the call directory, size-capped, without
//    following a link or waiting on a FIFO (else the fault kUnsafeFile).
//  - A timeout is recorded in options.events (when given), a reset that hung as the group was
//    given back included; so is the fault of giving the group back in the destructor (processes
//    left behind, a reset refused or not answered); when another number of ranks replaces the
//    group, that fault is the call's error instead.
//  - The adapter's own error replies become one Status naming every failing rank, with the
//    lowest one's code ("adapter rank 1: X", "adapter ranks 0, 1: X", "adapter rank 0: X; rank 1:
//    Y"). A fault (adapter_fault.h) kills the group; the next call starts a new one.
//  - The destructor gives the group back without finalizing (a pending async save is left to the
//    adapter's shutdown or reset); without a pool no process outlives the engine.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "targets/process/case_events.h"
#include "targets/process/group_slot.h"
#include "targets/process/rank_group.h"
#include "targets/process/rank_group_pool.h"
#include "targets/process/scratch_dir.h"
#include "targets/target.h"

namespace ckptspec {

struct ProcessEngineOptions {
  std::string command;    // the adapter command, run by /bin/sh -c
  std::string directory;  // the adapter's checkpoint directory (named in save and load)
  std::string work_dir;   // the harness's own (made if missing): call directories are made in it
  double timeout_s = 60;  // per request
  Capabilities capabilities;            // what capabilities() answers until a group has said hello
  CaseEvents* events = nullptr;         // not owned; outlives the engine when set
  std::shared_ptr<RankGroupPool> pool;  // null: a group per engine, shut down at the end
  std::vector<std::string> extra_env;   // added to every rank's environment (no pool: the pool's)
};

class ProcessEngine : public Engine {
 public:
  explicit ProcessEngine(ProcessEngineOptions options);
  ~ProcessEngine() override;

  Capabilities capabilities() const override { return capabilities_; }
  Status Save(int64_t iteration, SaveInput input, const SaveOptions& options) override;
  Status Finalize() override;
  // Revision 3: an adapter that declared `poll` gets a poll request carrying the pending save's
  // tensors whose bytes the caller changed in place since they last reached it (it writes them
  // into the buffers it handed its checkpointer), and answers whether the save is complete. An
  // adapter that did not declare it is not asked: a pending save reads incomplete until the next
  // Finalize, Save or Load. Finalize, Save and Load send such a poll first while a save is
  // pending, so the adapter has the caller's latest values before the save completes.
  Status Poll(bool* complete) override;
  Status Load(LoadRequest request, LoadResult* result) override;

  // Starts a one-rank group of `command`, says hello, shuts it down (processes left behind are
  // its error).
  static Status Probe(const std::string& command, double timeout_s, HelloReply* hello);

  // The current group (null before the first call); after a fault it is the dead group, whose
  // last_fault() names the verdict.
  const RankGroup* group() const { return slot_.group(); }
  // Every pid any group of this engine started.
  const std::vector<pid_t>& started_pids() const { return slot_.started_pids(); }

 private:
  Status EnsureGroup(int world_size);
  // Forgets the pending save and gives the group back (GroupSlot::Release).
  Status ReleaseGroup();
  Status NewCallDir(std::unique_ptr<ScratchDir>* dir);
  // Fills rank `rank`'s template *state from the files the adapter wrote for `call`.
  Status ReadLoadedEntries(int rank, const LoadCall& call, const LoadReply& reply,
                           const ScratchDir& dir, ShardedStateDict* state);

  // The async save a group staged and did not complete yet (see Poll).
  struct PendingSave {
    std::shared_ptr<const std::vector<ShardedStateDict>> live;  // the caller's dicts
    std::vector<std::vector<uint64_t>> held;  // per rank and tensor: the bytes the adapter has
  };

  ProcessEngineOptions options_;
  Capabilities capabilities_;
  std::optional<PendingSave> pending_;
  std::unique_ptr<ScratchSpace> scratch_;
  GroupSlot slot_;
};

}  // namespace ckptspec
