// A framework under test served by a framework adapter's processes (docs/PROTOCOL.md, "Framework
// adapters"): each operation is one request to every rank of a rank group whose world size is
// the job's, over a GroupSlot (group_slot.h: a group per process, or live groups from a pool).
//
// Contracts (beyond FrameworkUnderTest's):
//  - Build starts (or acquires) a group of the job's world size; NewProcess gives it back (a
//    reset into the pool, or a shutdown) and forgets the job, so the next Build has a fresh
//    process; the checkpoint directory stays.
//  - Every reply is untrusted (framework_protocol.h): a malformed one is the fault "malformed
//    reply" (the group is killed); ranks that disagree on the iteration a train, save or load
//    reached, or on whether a fault asks for a checkpoint and exit, are a malformed reply too.
//  - Error replies become one Status naming every failing rank (RanksErrors).
//  - Timeouts and the faults of giving the group back are recorded in options.events.
#pragma once

#include <memory>
#include <string>

#include "targets/tested_framework.h"
#include "targets/process/case_events.h"
#include "targets/process/group_slot.h"

namespace ckptspec {

struct ProcessFrameworkOptions {
  std::string command;           // the adapter command, run by /bin/sh -c
  std::string directory;         // the adapter's checkpoint directory (named in save and load)
  double timeout_s = 60;         // per request
  CaseEvents* events = nullptr;  // not owned; outlives the framework when set
  std::shared_ptr<RankGroupPool> pool;  // null: a group per process, shut down at the end
};

class ProcessFramework : public FrameworkUnderTest {
 public:
  explicit ProcessFramework(ProcessFrameworkOptions options);

  Status Build(const FrameworkJob& job) override;
  Status Train(int64_t steps, bool fault, TrainResult* result) override;
  Status Save(bool async, FrameworkSaveResult* result) override;
  Status Finalize() override;
  Status Load(const FrameworkLoad& load, int64_t* iteration) override;
  Status Observe(Observation* out) override;
  void NewProcess() override;

  const RankGroup* group() const { return slot_.group(); }

 private:
  // Sends `op` with the same members to every rank.
  Status CallAll(const std::string& op, const nlohmann::json& members,
                 std::vector<nlohmann::json>* replies);
  Status NeedsJob(const char* op) const;
  // A malformed-reply fault of rank `rank` (kills the group).
  Status Malformed(int rank, const std::string& detail);

  ProcessFrameworkOptions options_;
  GroupSlot slot_;
  bool built_ = false;
};

}  // namespace ckptspec
