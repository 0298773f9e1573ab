// One adapter rank as the harness speaks to it (docs/PROTOCOL.md), however it reached the harness:
// a process ckptspec started, with requests on its stdin and replies on its stdout (ProcessRank,
// below), or a rank an outside launcher started that dialled in to ckptspec's coordinator
// (SocketRank, coordinator.h). A RankGroup (rank_group.h) polls the descriptors and never needs to
// know which.
//
// Contracts:
//  - request_fd() and reply_fd() are non-blocking and close-on-exec (they may be the same socket).
//  - log_fd() is the rank's stderr when the harness holds it (-1 otherwise, or once closed):
//    DrainLog() reads what it holds now into log() without blocking.
//  - Ended(during) is called when the reply stream ended or the request stream broke: it says
//    which verdict (exited, crashed) and why, waiting briefly for a local process to be reaped.
//  - End() ends the rank now and is idempotent: a local process group is killed and reaped; a
//    connection is closed (the rank, which is its launcher's to end, leaves when its connection
//    closes). CloseRequests() and WaitEnded() are the orderly end after a shutdown request.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>

#include "model/status.h"
#include "targets/process/adapter_fault.h"
#include "targets/process/capped_log.h"
#include "targets/process/subprocess.h"

namespace ckptspec {

class RankEndpoint {
 public:
  virtual ~RankEndpoint() = default;

  virtual int request_fd() const = 0;
  virtual int reply_fd() const = 0;
  virtual int log_fd() const = 0;
  virtual void DrainLog() = 0;
  virtual const CappedLog& log() const = 0;
  // The pid of a process ckptspec started on this host; -1 for a rank it did not start.
  virtual pid_t local_pid() const = 0;
  // Where the rank runs, for messages: "" for a process ckptspec started; "launch rank 2 on host
  // node1, pid 4242" for a launched one.
  virtual std::string Where() const = 0;
  // What the fault's message says when the rank has no stderr here ("" when it has).
  virtual std::string LogElsewhere() const { return ""; }
  virtual std::pair<AdapterFault, std::string> Ended(const std::string& during) = 0;
  virtual void End() = 0;
  virtual void CloseRequests() = 0;
  // Waits up to `timeout_s` for the rank to end after CloseRequests (draining its log); true when
  // it ended.
  virtual bool WaitEnded(double timeout_s) = 0;
};

// A rank process ckptspec started: `/bin/sh -c COMMAND` (subprocess.h).
class ProcessRank : public RankEndpoint {
 public:
  ProcessRank() = default;
  Status Start(const std::string& command, const std::vector<std::string>& env) {
    return process_.Start(command, env);
  }

  int request_fd() const override { return process_.stdin_fd(); }
  int reply_fd() const override { return process_.stdout_fd(); }
  int log_fd() const override { return process_.stderr_fd(); }
  void DrainLog() override { process_.DrainStderr(); }
  const CappedLog& log() const override { return process_.log(); }
  pid_t local_pid() const override { return process_.pid(); }
  std::string Where() const override { return ""; }
  std::pair<AdapterFault, std::string> Ended(const std::string& during) override;
  void End() override { process_.Kill(); }
  void CloseRequests() override { process_.CloseStdin(); }
  bool WaitEnded(double timeout_s) override { return process_.WaitFor(timeout_s); }

 private:
  Subprocess process_;
};

}  // namespace ckptspec
