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
//  - Idle groups hold at most `bounds.max_ranks` rank processes and `bounds.max_bytes` of memory in
//    all, at most one group per world size. A group's memory is measured when it is kept, after
//    its reset: the memory of its ranks and of everything they started (the measure given; by
//    default their resident anonymous memory, ResidentTreeBytes of process_tree.h); where that
//    cannot be measured, each rank counts as `bounds.unmeasured_rank_bytes`. While the idle groups exceed
//    either bound, the group whose world size Acquire was asked for least often over the pool's
//    life is shut down, among equals the one idle longest (the group just released counts as idle
//    the shortest time; it may be the one shut down): a world size most cases use outlives a big
//    one that a single resharding case asked for. The bound is in memory because that is what an idle rank costs: a
//    rank of the built-in adapter holds a few MB, a Python rank that imported torch about 0.85 GB.
//    The destructor shuts every idle group down.
//  - Ranks that declared "regroup" (revision 6) serve every world size: when no idle group has the
//    size asked for, the pool takes free ranks, then breaks up idle groups (the size asked for
//    least first, among equals the one idle longest) into free ranks, starts only the ranks still
//    missing, and says hello to the new group (its own name and store). Idle ranks, in groups or
//    free, count against the same bounds; free ranks give way first.
//  - Launched pools (Launched()): the ranks are the n that an outside launcher started and that
//    dialled in to the coordinator (coordinator.h). The pool never starts a rank: a case needs at
//    most n ranks, and its ranks are taken round-robin over the hosts (the first rank of each
//    host, then the second, ...), so that a group of more than one rank spans hosts. The ranks
//    must declare reset and regroup. Idle ranks are never shut down before the pool ends. A rank
//    lost to a fault (a disconnect, a timeout, ...) is gone for good: a later Acquire that needs
//    more ranks than remain fails, naming the lost ranks and why.
//  - Request ids come from one counter for every group of the pool (ids()).
//  - Not thread-safe: one pool serves one target, whose cases run one after another.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "model/status.h"
#include "targets/process/coordinator.h"
#include "targets/process/rank_group.h"

namespace ckptspec {

// What idle groups may hold in all (see the contracts above).
struct IdleBounds {
  size_t max_ranks = 0;
  uint64_t max_bytes = 0;
  uint64_t unmeasured_rank_bytes = 0;
};

// What the idle groups of one adapter target (runner/adapter_target.h) may hold: 8 GiB of
// memory, at most 64 ranks. A rank of the built-in adapter holds a few MB, so every world size a
// run uses stays live; a Python rank that imported torch and megatron-core holds about 0.85 GB,
// so about nine of those do. Where memory cannot be measured a rank counts as 1 GiB (eight in
// 8 GiB). docs/PROTOCOL.md states these figures (checked by a test).
inline constexpr IdleBounds kAdapterTargetIdleBounds{64, uint64_t{8} << 30, uint64_t{1} << 30};

// The memory a group holds, or nullopt where it cannot be measured.
using GroupMemoryMeasure = std::function<std::optional<uint64_t>(const RankGroup&)>;

// Sums ResidentTreeBytes over the group's rank processes (nullopt when any cannot be read).
std::optional<uint64_t> ResidentGroupBytes(const RankGroup& group);

class RankGroupPool {
 public:
  // `options.world_size` is ignored: each group gets the size asked for.
  RankGroupPool(RankGroupOptions options, IdleBounds bounds,
                GroupMemoryMeasure measure = ResidentGroupBytes);
  // A launched pool over `ranks` (see the contracts); `options.launcher_store` is set.
  static std::shared_ptr<RankGroupPool> Launched(RankGroupOptions options,
                                                 std::vector<std::unique_ptr<SocketRank>> ranks);
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
  // The memory idle groups hold, as measured when each was kept.
  uint64_t idle_bytes() const;
  // Groups started over the pool's life (for tests and reports).
  size_t started() const { return started_; }
  // Rank processes the pool started itself to complete a regrouped group.
  size_t ranks_started() const { return ranks_started_; }
  // Groups formed of free ranks by regrouping.
  size_t regrouped() const { return regrouped_; }
  size_t free_ranks() const { return free_.size(); }
  bool launched() const { return launched_; }

 private:
  struct IdleGroup {
    std::unique_ptr<RankGroup> group;
    uint64_t bytes = 0;
  };

  // A group of `world_size` from free ranks (breaking up idle groups, starting what is missing).
  Status Regroup(int world_size, std::unique_ptr<RankGroup>* group, std::vector<pid_t>* started);
  // Takes `n` free ranks in the order the contract gives.
  std::vector<std::unique_ptr<RankEndpoint>> TakeFree(size_t n);
  // Enforces the bounds after a group was kept (the last of idle_): the outcome of that group's
  // own shutdown, if it had to give way.
  Status Trim();
  void NoteLost(const RankGroup& group, const Status& why);

  RankGroupOptions options_;
  IdleBounds bounds_;
  GroupMemoryMeasure measure_;
  RequestIds ids_;
  std::vector<IdleGroup> idle_;  // longest idle first
  struct FreeRank {
    std::unique_ptr<RankEndpoint> rank;
    uint64_t bytes = 0;  // its memory when it was freed
  };
  std::vector<FreeRank> free_;  // ranks out of any group (regroup), freed longest ago first
  bool regroup_ = false;        // the ranks declared regroup (known after the first hello)
  bool launched_ = false;
  size_t launched_ranks_ = 0;
  std::vector<std::string> lost_;  // launched: the ranks lost and why
  std::map<int, uint64_t> asked_;  // world size -> Acquire calls for it
  size_t started_ = 0;
  size_t ranks_started_ = 0;
  size_t regrouped_ = 0;
};

}  // namespace ckptspec
