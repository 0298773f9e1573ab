// A pool of live adapter rank groups that serve case after case (docs/PROTOCOL.md, "reset"), so
// that an adapter whose ranks take seconds to start (a Python rank importing torch) is started
// once per target rather than once per engine call.
//
// Contracts:
//  - Acquire(N) hands out an idle group of N ranks when the pool holds one, else starts a new one
//    (hello included). A group is used by one engine at a time: it leaves the pool while in use.
//  - Release() takes a group back after its engine is done with it. The group is kept only if it
//    is alive, every rank declared "reset" in its hello, every rank answers the reset request
//    with ok, and no orphan of the adapter (a process reparented to ckptspec) is running
//    afterwards; otherwise it is shut down (or, after a fault, already dead) and dropped, and the
//    reset's error or the leftovers (the fault kLeftBehind, after they were killed) are returned.
//    A group whose ranks did not declare "reset" is shut down as before the pool existed.
//  - Idle groups hold at most `max_idle_ranks` rank processes in all, at most one group per world
//    size: a group of more ranks is shut down rather than kept, and keeping one shuts down the
//    groups idle longest until it fits. The bound is in ranks, not groups, because an idle rank
//    costs its memory (a Python rank that imported torch holds about 600 MB). The destructor
//    shuts every idle group down.
//  - Request ids come from one counter for every group of the pool (ids()).
//  - Not thread-safe: one pool serves one target, whose cases run one after another.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "model/status.h"
#include "targets/process/rank_group.h"

namespace ckptspec {

class RankGroupPool {
 public:
  // `options.world_size` is ignored: each group gets the size asked for.
  RankGroupPool(RankGroupOptions options, size_t max_idle_ranks);
  ~RankGroupPool();
  RankGroupPool(const RankGroupPool&) = delete;
  RankGroupPool& operator=(const RankGroupPool&) = delete;

  // A started group of `world_size` ranks in *group (its hello() is rank 0's reply). When a new
  // group had to be started, its pids are appended to *started (when given). On a start failure
  // *group is the dead group (its last_fault() names the verdict) and the fault is returned.
  Status Acquire(int world_size, std::unique_ptr<RankGroup>* group,
                 std::vector<pid_t>* started = nullptr);

  // Takes back a group Acquire handed out (null is a no-op), as the contract above says. When
  // given, *fault is set to the fault that ended the group while it was reset (a timeout, ...).
  Status Release(std::unique_ptr<RankGroup> group, std::optional<AdapterFault>* fault = nullptr);

  RequestIds* ids() { return &ids_; }
  // Idle groups now held, and their ranks (for tests).
  size_t idle() const { return idle_.size(); }
  size_t idle_ranks() const;
  // Groups started over the pool's life (for tests and reports).
  size_t started() const { return started_; }

 private:
  RankGroupOptions options_;
  size_t max_idle_ranks_;
  RequestIds ids_;
  std::vector<std::unique_ptr<RankGroup>> idle_;  // longest idle first
  size_t started_ = 0;
};

}  // namespace ckptspec
