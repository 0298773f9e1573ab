// Where an engine or a framework served by adapter processes holds its rank group
// (rank_group.h): one group at a time, of the world size its calls need, started afresh or taken
// from a pool of live groups (rank_group_pool.h), given back by a reset into the pool or a
// shutdown. What the harness does around every call is here once: recording a timeout in the
// case's events, and turning the ranks' error replies into one Status.
//
// Contracts:
//  - Ensure(N) keeps the current group when it is alive and has N ranks; otherwise gives it back
//    (Release) and starts or acquires one of N ranks (hello included).
//  - Release gives the group back (pool: Release, which resets it; else Shutdown) and forgets
//    it; a reset that hung is recorded as the case's timeout. Returns the fault of giving it back
//    (processes left behind, a reset refused), else OK. The destructor releases, and records that
//    fault as the case's release_fault.
//  - Call sends one request per rank and returns OK only when every rank replied ok; a fault of
//    the exchange (a timeout noted in events) or the ranks' error replies (RanksErrors) otherwise.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/status.h"
#include "targets/process/case_events.h"
#include "targets/process/rank_group.h"
#include "targets/process/rank_group_pool.h"

namespace ckptspec {

// OK when every reply has "ok" true; else every failing rank's error, with the lowest failing
// rank's code: "adapter rank 1: ...", "adapter ranks 0, 1: ..." when they say the same, else
// "adapter rank 0: ...; rank 1: ...". Ranks often fail differently: the coordinator with the
// cause, the others with what it did to them. Precondition: the replies passed RankGroup::Call.
Status RanksErrors(const std::vector<nlohmann::json>& replies);

class GroupSlot {
 public:
  // `pool` null: a group per Ensure (`group`, of the world size Ensure asks for), shut down at
  // Release. `events` not owned, may be null.
  GroupSlot(RankGroupOptions group, std::shared_ptr<RankGroupPool> pool, CaseEvents* events);
  ~GroupSlot();
  GroupSlot(const GroupSlot&) = delete;
  GroupSlot& operator=(const GroupSlot&) = delete;

  Status Ensure(int world_size);
  Status Release();

  // The current group (null before the first Ensure or after Release); after a fault it is the
  // dead group, whose last_fault() names the verdict.
  RankGroup* group() const { return group_.get(); }
  bool alive() const { return group_ && group_->alive(); }

  // Returns `s`, having recorded it in the events when the group timed out.
  Status NoteTimeout(Status s);
  Status Call(const std::string& op, std::vector<nlohmann::json> requests,
              std::vector<nlohmann::json>* replies);

  // Every pid any group of this slot started.
  const std::vector<pid_t>& started_pids() const { return started_pids_; }

 private:
  RankGroupOptions group_options_;  // world size set by Ensure
  std::shared_ptr<RankGroupPool> pool_;
  CaseEvents* events_;
  RequestIds ids_;  // without a pool
  std::unique_ptr<RankGroup> group_;
  std::vector<pid_t> started_pids_;
};

}  // namespace ckptspec
