// One adapter rank process: `/bin/sh -c COMMAND` in a process group of its own, with its stdin,
// stdout and stderr on pipes (docs/PROTOCOL.md, "Processes").
//
// Contracts:
//  - The parent's pipe ends are non-blocking and close-on-exec, so no other child inherits them
//    (end of file on a rank's stdout means that rank, and the processes it started, let it go).
//  - stderr is read by the harness (DrainStderr, called while it waits on the rank) into a
//    CappedLog: the head and the tail are kept, the rest counted. A rank that writes to stderr
//    while nobody drains it blocks once the pipe is full, until the next drain.
//  - The process group is recorded in the cleanup registry (cleanup_registry.h) from the start
//    (posix_spawn, which copies no page tables of the harness) until Kill(), so a termination
//    signal to ckptspec kills it too, and so does the registry's watchdog when ckptspec is killed
//    outright (SIGKILL). The child starts with an empty signal mask and SIGPIPE's
//    default action. A shell that cannot be started is an IOError naming posix_spawn's error.
//  - Kill() sends SIGKILL to the whole process group (the shell and whatever it started) and reaps
//    the child and its descendants in the group; the destructor does the same, so a Subprocess
//    never leaves a process behind in its group, not even a zombie. Descendants that left the
//    group are found by the registry's FindLeftoverChildren (this process is a child subreaper).
//  - Nothing here throws; failures are Status values naming the command and the system call.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "model/status.h"
#include "targets/process/capped_log.h"

namespace ckptspec {

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts `command` with the parent's environment plus `extra_env` ("NAME=value"; a name given
  // here replaces the parent's). Call once.
  Status Start(const std::string& command, const std::vector<std::string>& extra_env);

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return stdin_fd_; }
  int stdout_fd() const { return stdout_fd_; }
  // -1 once the rank (and whatever inherited it) closed its stderr.
  int stderr_fd() const { return stderr_fd_; }
  void CloseStdin();
  // Reads what stderr holds now (up to a few MiB, so a flood cannot hold the caller) into the
  // log, without blocking.
  void DrainStderr();
  const CappedLog& log() const { return log_; }

  // Waits up to `timeout_s` for the child to end, draining stderr; true once it has been reaped.
  bool WaitFor(double timeout_s);
  // SIGKILL to the process group, then reaps the child (blocking). Idempotent.
  void Kill();
  bool reaped() const { return reaped_; }
  // How the reaped child ended: "exited with status 3", "killed by signal 9 (SIGKILL)";
  // "still running" before it is reaped. The shell reports a command killed by signal N as exit
  // status 128 + N: that counts as the signal ("..., as its shell reports (exit status 137)").
  std::string ExitDescription() const;
  bool died_of_signal() const;

 private:
  void CloseFds();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  bool reaped_ = false;
  bool killed_ = false;
  int wait_status_ = 0;
  CappedLog log_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0). 0 when none could be had.
int PickFreePort();

}  // namespace ckptspec
