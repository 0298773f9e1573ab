// One adapter rank process: `/bin/sh -c COMMAND` in a process group of its own, with its stdin and
// stdout on pipes and its stderr appended to a log file (docs/PROTOCOL.md, "Processes").
//
// Contracts:
//  - The parent's pipe ends are non-blocking and close-on-exec, so no other child inherits them
//    (end of file on a rank's stdout means that rank, and the processes it started, let it go).
//  - Kill() sends SIGKILL to the whole process group (the shell and whatever it started) and reaps
//    the child and its descendants in the group; the destructor does the same, so a Subprocess
//    never leaves a process behind, not even a zombie (unless a grandchild moved itself to another
//    process group). For that, the first Start() makes this process a child subreaper
//    (PR_SET_CHILD_SUBREAPER): orphaned descendants are reparented to it instead of to init.
//  - Nothing here throws; failures are Status values naming the command and the system call.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "model/status.h"

namespace ckptspec {

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts `command` with the parent's environment plus `extra_env` ("NAME=value"; a name given
  // here replaces the parent's). stderr is appended to `log_path` (created if needed).
  // Call once.
  Status Start(const std::string& command, const std::vector<std::string>& extra_env,
               const std::string& log_path);

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return stdin_fd_; }
  int stdout_fd() const { return stdout_fd_; }
  const std::string& log_path() const { return log_path_; }
  void CloseStdin();

  // Waits up to `timeout_s` for the child to end; true once it has been reaped.
  bool WaitFor(double timeout_s);
  // SIGKILL to the process group, then reaps the child (blocking). Idempotent.
  void Kill();
  bool reaped() const { return reaped_; }
  // How the reaped child ended: "exited with status 3", "killed by signal 9 (SIGKILL)";
  // "still running" before it is reaped. The shell reports a command killed by signal N as exit
  // status 128 + N: that counts as the signal ("..., as its shell reports (exit status 137)").
  std::string ExitDescription() const;
  bool died_of_signal() const;
  // The last `max_bytes` of the log, on one line ('\n' shown as " | "); "" when empty.
  std::string LogTail(size_t max_bytes) const;

 private:
  void CloseFds();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  bool reaped_ = false;
  bool killed_ = false;
  int wait_status_ = 0;
  std::string log_path_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0). 0 when none could be had.
int PickFreePort();

}  // namespace ckptspec
